package job

import (
	"errors"
	"fmt"
)

// The errors the scripts reply with, by the codes docs/design.md#fencing gives them.
var (
	// ErrGone means there is no such job.
	ErrGone = errors.New("no such job")
	// ErrStale means the token is not the current holder's, or the job is no
	// longer active under it.
	ErrStale = errors.New("the token does not hold this job")
	// ErrState means the verb does not apply in the job's current state.
	ErrState = errors.New("the verb does not apply in the job's state")
	// ErrInvalid means the request names what cannot be (a dependency
	// that is no job of the queue); the API answers it 400 EMQINVALID.
	ErrInvalid = errors.New("invalid request")
)

// codes maps a script's error code to its error.
var codes = map[string]error{
	"EMQGONE":    ErrGone,
	"EMQSTALE":   ErrStale,
	"EMQSTATE":   ErrState,
	"EMQINVALID": ErrInvalid,
}

// ErrorOfCode is the error of a script's error code (EMQGONE, EMQSTALE,
// EMQSTATE); rediserr.Script reads the codes from the replies.
func ErrorOfCode(code string) (error, bool) {
	err, ok := codes[code]
	return err, ok
}

// CodeError turns an error code that a script returned as data (the batch
// scripts report refusals per job) into its error.
func CodeError(code, id string) error {
	if domain, ok := codes[code]; ok {
		return fmt.Errorf("%w: %s", domain, id)
	}
	return fmt.Errorf("unknown error code %q for job %s", code, id)
}
