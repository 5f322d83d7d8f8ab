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

// GoneError is an ErrGone that says what is gone when it is not a job: a
// schedule, a batch, a queue's push target. errors.Is(err, ErrGone) holds
// for it, so the API answers it 404 EMQGONE as it does a job, titled by
// What ("No such schedule", "No push target"). A GoneError without a Name
// or a Queue is a sentinel of its What: errors.Is matches every GoneError
// of that What against it (scheduler.ErrNotFound, batch.ErrNotFound).
type GoneError struct {
	What  string // what is gone: "schedule", "batch", "push target"
	Queue string // the queue it belongs to
	// Name is its name or id; "" for what a queue has one of (its push
	// target), which the text then says the queue has no such thing.
	Name string
}

// Error says what is gone: "no such schedule: nightly", or "queue receipts
// has no push target" for what a queue has one of.
func (e *GoneError) Error() string {
	if e.Name == "" && e.Queue != "" {
		return "queue " + e.Queue + " has no " + e.What
	}
	if e.Name == "" {
		return "no such " + e.What
	}
	return "no such " + e.What + ": " + e.Name
}

// Is reports whether target is ErrGone, or the sentinel of e's What.
func (e *GoneError) Is(target error) bool {
	if target == ErrGone {
		return true
	}
	t, ok := target.(*GoneError)
	return ok && t.What == e.What && t.Name == "" && t.Queue == ""
}

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
