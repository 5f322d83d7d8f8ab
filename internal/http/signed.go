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
// in all, however many come at once. Once the signature holds, the body is
// copied out of its slabs (it is its caller's now, as any authenticated
// request's is), the slabs go back, and r.Body reads the copy.
func (s *server) verifySigned(r *http.Request, header string) (auth.Key, error) {
	sig, err := auth.ParseSignature(r.Header.Get("X-EMQ-Timestamp"), header, time.Now())
	if err != nil {
		return auth.Key{}, unauthorized(err)
	}
	v := s.cfg.Keys.NewVerifier(sig, r.Method, r.URL.RequestURI())
	body := &signedBody{budget: s.unverified}
	defer body.release()
	if err := body.read(r, v); err != nil {
		return auth.Key{}, err
	}
	key, err := v.Key(r.Context(), s.cfg.Replays)
	if err != nil {
		return auth.Key{}, unauthorized(err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body.bytes()))
	return key, nil
}

// bodyBudget bounds the memory that bodies of signed requests hold while
// their signatures are checked: a fixed number of slabs, reused, so that
// a flood of badly signed requests neither holds more than the budget nor
// leaves garbage behind. A body takes its first slab only when its bytes
// come, so a connection that declares a large body and sends nothing holds
// none; once its first slab is full, a body of a declared length takes the
// rest at once, so that two bodies never wait on each other holding parts.
type bodyBudget struct {
	slabs *semaphore.Weighted // slabs taken
	free  chan []byte         // slabs made and not taken
}

// slabSize is the unit in which the budget is lent.
const slabSize = 16 << 10

// budgetWait is how long a body waits for each slab before it is answered
// 503 EMQBUSY: long enough for a burst of honest senders to take turns,
// short enough not to pile requests up behind a flood.
const budgetWait = time.Second

// firstSlabs is how many bodies may hold their first slab beside one of
// the limit's size: a body of no declared length that fills its last slab
// takes one more to find its end, and a body of the limit waits for the
// first slabs of others only when more than this many are being read.
const firstSlabs = 64

// newBodyBudget makes a budget of bytes, in whole slabs, and firstSlabs
// more.
func newBodyBudget(bytes int) *bodyBudget {
	size := int64((bytes+slabSize-1)/slabSize) + firstSlabs
	return &bodyBudget{slabs: semaphore.NewWeighted(size), free: make(chan []byte, size)}
}

// signedBody is a body being read into slabs of a budget. It holds a
// place in the budget for every slab it has and perhaps more (held), so
// that the budget never makes more slabs than it has places and free
// never fills.
type signedBody struct {
	budget *bodyBudget
	slabs  [][]byte
	held   int64 // places taken in the budget: len(slabs) or more
	n      int   // bytes in the last slab
}

// read reads r's body whole into slabs, and into w as it comes. A body
// shorter than its declared length is refused (400), one past the limit
// too (413, limitBody), and one that finds no slab free within budgetWait
// is 503 EMQBUSY.
func (body *signedBody) read(r *http.Request, w io.Writer) error {
	for read := int64(0); read != r.ContentLength; {
		if int64(len(body.slabs)) == body.held {
			places := int64(1)
			if read > 0 && r.ContentLength > 0 { // the rest at once
				places = (r.ContentLength - read + slabSize - 1) / slabSize
			}
			if err := body.take(r.Context(), places); err != nil {
				return err
			}
		}
		slab := body.slab()
		n, err := io.ReadFull(r.Body, slab)
		body.n, read = n, read+int64(n)
		w.Write(slab[:n]) // a Verifier: never fails
		ended := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		switch {
		case read == r.ContentLength, r.ContentLength < 0 && ended:
			return nil // all of it
		case ended:
			return bodyError(io.ErrUnexpectedEOF) // shorter than it said
		case err != nil:
			return bodyError(err)
		}
	}
	return nil
}

// take waits up to budgetWait for n places in the budget.
func (body *signedBody) take(ctx context.Context, n int64) error {
	ctx, cancel := context.WithTimeout(ctx, budgetWait)
	defer cancel()
	if err := body.budget.slabs.Acquire(ctx, n); err != nil {
		return &requestError{code: CodeBusy, detail: "too many signed requests are being checked at once; retry later"}
	}
	body.held += n
	return nil
}

// slab is the body's next slab: a free one of the budget, or a new one.
func (body *signedBody) slab() []byte {
	var slab []byte
	select {
	case slab = <-body.budget.free:
	default:
		slab = make([]byte, slabSize)
	}
	body.slabs = append(body.slabs, slab)
	return slab
}

// bytes is a copy of the body.
func (body *signedBody) bytes() []byte {
	var all []byte
	if len(body.slabs) > 0 {
		all = make([]byte, 0, (len(body.slabs)-1)*slabSize+body.n)
	}
	for i, slab := range body.slabs {
		if i == len(body.slabs)-1 {
			slab = slab[:body.n]
		}
		all = append(all, slab...)
	}
	return all
}

// release gives the body's slabs back to the budget: first to the free
// list, then their places, so that a slab made meanwhile is never one too
// many for free to hold.
func (body *signedBody) release() {
	for _, slab := range body.slabs {
		body.budget.free <- slab // never blocks (signedBody)
	}
	if body.held > 0 {
		body.budget.slabs.Release(body.held)
	}
	body.slabs, body.held = nil, 0
}
