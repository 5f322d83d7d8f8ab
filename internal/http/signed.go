package http

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/echo-mq/echo_mq/internal/auth"
)

// verifySigned finds the key that signed r (X-EMQ-Signature). Its headers
// are checked before any of its body is read, and the body is read into
// the verifier in slabs of the service's budget for unverified bodies, so
// that requests nobody has authenticated yet hold at most that many bytes
// in all, however many come at once. r.Body is replaced by what was read;
// release gives its slabs back once the handler is done with it.
func (s *server) verifySigned(r *http.Request, header string) (key auth.Key, release func(), err error) {
	sig, err := auth.ParseSignature(r.Header.Get("X-EMQ-Timestamp"), header, time.Now())
	if err != nil {
		return auth.Key{}, func() {}, unauthorized(err)
	}
	v := s.cfg.Keys.NewVerifier(sig, r.Method, r.URL.RequestURI())
	body, err := s.unverified.read(r, v)
	if err != nil {
		body.release()
		return auth.Key{}, func() {}, err
	}
	r.Body = io.NopCloser(body.reader())
	if key, err = v.Key(r.Context(), s.cfg.Replays); err != nil {
		body.release()
		return auth.Key{}, func() {}, unauthorized(err)
	}
	return key, body.release, nil
}

// bodyBudget bounds the memory that bodies of signed requests hold: a
// fixed number of slabs, reused. A body holds its slabs while its
// signature is checked and, once it is, until its handler is done, so
// that a flood of badly signed requests neither holds more than the
// budget nor leaves garbage behind.
type bodyBudget struct {
	slabs *semaphore.Weighted // slabs in use
	free  chan []byte         // slabs made and not in use
	size  int64               // slabs in all
}

// slabSize is the unit in which the budget is lent.
const slabSize = 64 << 10

// budgetWait is how long a request waits for room in the budget before it
// is answered 503 EMQBUSY: long enough for a burst of honest senders to
// take turns, short enough not to pile requests up behind a flood.
const budgetWait = time.Second

// newBodyBudget makes a budget of bytes, rounded up to whole slabs.
func newBodyBudget(bytes int) *bodyBudget {
	size := int64((bytes + slabSize - 1) / slabSize)
	return &bodyBudget{slabs: semaphore.NewWeighted(size), free: make(chan []byte, size), size: size}
}

// signedBody is a body read into slabs of a budget.
type signedBody struct {
	budget *bodyBudget
	slabs  [][]byte
	held   int64 // slabs taken from the budget, some perhaps not made yet
	n      int   // bytes in the last slab
}

// read reads r's body whole, into w as it goes: a body of a declared
// length takes all its slabs at once (so that two bodies never wait on
// each other holding half), one of no declared length a slab at a time.
// Release the body whether or not read failed.
func (b *bodyBudget) read(r *http.Request, w io.Writer) (*signedBody, error) {
	ctx, cancel := context.WithTimeout(r.Context(), budgetWait)
	defer cancel()
	body := &signedBody{budget: b}
	if r.ContentLength >= 0 { // limitBody has capped it, within the budget
		if err := body.take(ctx, (r.ContentLength+slabSize-1)/slabSize); err != nil {
			return body, err
		}
	}
	for read := int64(0); read != r.ContentLength; {
		if int64(len(body.slabs)) == body.held {
			if err := body.take(ctx, 1); err != nil {
				return body, err
			}
		}
		slab := b.slab()
		body.slabs = append(body.slabs, slab)
		n, err := io.ReadFull(r.Body, slab)
		body.n, read = n, read+int64(n)
		w.Write(slab[:n])
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return body, nil
		case err != nil:
			return body, bodyError(err)
		}
	}
	return body, nil
}

// take holds n more slabs of the budget, or answers 503 EMQBUSY when they
// are not free in time.
func (body *signedBody) take(ctx context.Context, n int64) error {
	if err := body.budget.slabs.Acquire(ctx, n); err != nil {
		return &requestError{code: CodeBusy, detail: "too many signed requests are being checked at once; retry later"}
	}
	body.held += n
	return nil
}

// slab is a free slab of the budget, made when none is.
func (b *bodyBudget) slab() []byte {
	select {
	case slab := <-b.free:
		return slab
	default:
		return make([]byte, slabSize)
	}
}

// reader reads the body back.
func (body *signedBody) reader() io.Reader {
	parts := make([]io.Reader, len(body.slabs))
	for i, slab := range body.slabs {
		if i == len(body.slabs)-1 {
			slab = slab[:body.n]
		}
		parts[i] = bytes.NewReader(slab)
	}
	return io.MultiReader(parts...)
}

// release gives the body's slabs back to the budget.
func (body *signedBody) release() {
	for _, slab := range body.slabs {
		body.budget.free <- slab // never blocks: at most size slabs are made
	}
	body.slabs = nil
	if body.held > 0 {
		body.budget.slabs.Release(body.held)
		body.held = 0
	}
}
