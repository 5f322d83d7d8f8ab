// Package lease is the worker plane of echo_mq: enqueue, claim, extend
// (checkpoint), complete, fail, cancel and the cancellation check, each one
// atomic script on the Redis server.
//
// # The fence
//
// A claim leases a job: the job's score in the queue's active set becomes the
// lease deadline, measured on the Redis server's clock, and the claimer gets
// a token: a random positive integer below 2^53 (drawn with crypto/rand for
// each call, the call's jobs getting consecutive ones) that nobody else can
// guess, and never one the job's row holds or remembers; a job removed and
// enqueued again under its id gets an old holder's token only by a chance
// of 2^-53 (docs/design.md#fencing). The token is stored on the job's row;
// only the current holder knows it.
//
// Every later call of the holder names the token, and a script refuses it
// with ErrStale (409 EMQSTALE) unless the row's token is that token and the
// job is still active. So a worker that lost its job (its lease lapsed and a
// sweep recovered the job, or the job was cancelled, retried or claimed by
// someone else) can never extend it back into the active set, nor complete
// or fail it. A lease that has lapsed but that no sweep has recovered yet can
// still be extended: the token proves nobody else holds the job.
//
// Complete and fail are idempotent for their holder: repeating the same call
// with the same token after it succeeded answers the job as the first call
// did, so a worker that retries on a network error sees no false failure.
//
// # Cancellation
//
// A cancel is a message, never a kill. A waiting job is cancelled at once; an
// active one is marked cancel_requested, pinned to the current attempt. The
// holder learns it from its next extend or cancellation check and then
// reports fail (the job becomes cancelled, no retry) or complete.
package lease
