package job

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
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
)

// codes maps a script's error code to its error.
var codes = map[string]error{
	"EMQGONE":  ErrGone,
	"EMQSTALE": ErrStale,
	"EMQSTATE": ErrState,
}

// ScriptError turns a script's error reply into ErrGone, ErrStale or
// ErrState, and passes any other error through. It is the one place that
// reads a reply's text.
func ScriptError(err error) error {
	if err == nil {
		return nil
	}
	for code, domain := range codes {
		if redis.HasErrorPrefix(err, code) {
			return replyError{domain: domain, text: strings.TrimPrefix(err.Error(), code+" ")}
		}
	}
	return err
}

// replyError is a script's refusal: its text (without the code) says which
// job, and it unwraps to the domain error.
type replyError struct {
	domain error
	text   string
}

func (e replyError) Error() string { return e.text }
func (e replyError) Unwrap() error { return e.domain }

// CodeError turns an error code that a script returned as data (the batch
// scripts report refusals per job) into its error.
func CodeError(code, id string) error {
	if domain, ok := codes[code]; ok {
		return fmt.Errorf("%w: %s", domain, id)
	}
	return fmt.Errorf("unknown error code %q for job %s", code, id)
}
