package main

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"
)

// server holds what the handlers share.
type server struct {
	rdb   *redis.Client
	log   *slog.Logger
	stock *stock
	ids   atomic.Uint64 // made-up jobs' ids and tokens
}

// newHandler routes the requests emqbench makes, at echo_mq's paths.
// Every route of a shape makes one FCALL; /readyz makes none, and a
// queue's delete (emqbench's cleanup, outside what it measures) one DEL.
func newHandler(rdb *redis.Client, log *slog.Logger) http.Handler {
	s := &server{rdb: rdb, log: log, stock: newStock()}
	const q, job = "/queues/{queue}", "/queues/{queue}/jobs/{id}"
	r := chi.NewRouter()
	r.Get("/readyz", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	r.Post(q+"/jobs", s.handleEnqueue)
	r.Post(q+"/jobs/batch", s.handleEnqueueBatch)
	r.Post(q+"/claim", s.handleClaim)
	r.Post(q+"/complete", s.handleCompleteBatch)
	r.Post(job+"/complete", s.handleComplete)
	r.Post(job+"/lease", s.handleLeaseExtend)
	r.Put(q+"/settings", s.handleSettingsPut)
	r.Delete(q, s.handleQueueDelete)
	return r
}

// payload is every made-up job's payload: emqbench's, 100 bytes of JSON.
var payload = json.RawMessage(`{"to":"user@example.com","template":"welcome","locale":"en-GB","pad":"abcdefghijklmnopqrstuvwxyz01"}`)

// maxWait is the longest a claim waits for a job, as echo_mq's.
const maxWait = 30 * time.Second

func (s *server) handleEnqueue(w http.ResponseWriter, r *http.Request) {
	var req enqueueRequest
	if !decode(w, r, &req) {
		return
	}
	queue, now := chi.URLParam(r, "queue"), stamp(time.Now())
	j := s.newJob(queue, "pending", req.Payload, now)
	if !s.touch(w, r, queue, j.ID) {
		return
	}
	s.stock.add(queue, 1)
	write(w, http.StatusCreated, j)
}

func (s *server) handleEnqueueBatch(w http.ResponseWriter, r *http.Request) {
	var req enqueueBatchRequest
	if !decode(w, r, &req) {
		return
	}
	queue, now := chi.URLParam(r, "queue"), stamp(time.Now())
	out := jobList{Jobs: make([]jobAnswer, len(req.Jobs))}
	for i, e := range req.Jobs {
		out.Jobs[i] = s.newJob(queue, "pending", e.Payload, now)
	}
	if !s.touch(w, r, queue, strconv.Itoa(len(req.Jobs))) {
		return
	}
	s.stock.add(queue, len(req.Jobs))
	write(w, http.StatusOK, out)
}

func (s *server) handleClaim(w http.ResponseWriter, r *http.Request) {
	var req claimRequest
	if !decode(w, r, &req) {
		return
	}
	queue := chi.URLParam(r, "queue")
	wait := min(time.Duration(req.WaitMs)*time.Millisecond, maxWait)
	n := s.stock.take(r.Context(), queue, max(req.Count, 1), wait)
	if !s.touch(w, r, queue, strconv.Itoa(n)) {
		return
	}
	write(w, http.StatusOK, jobList{Jobs: s.claimed(queue, n, time.Duration(req.LeaseMs)*time.Millisecond)})
}

func (s *server) handleComplete(w http.ResponseWriter, r *http.Request) {
	var req completeRequest
	if !decode(w, r, &req) {
		return
	}
	queue, id, now := chi.URLParam(r, "queue"), chi.URLParam(r, "id"), time.Now()
	if !s.touch(w, r, queue, id) {
		return
	}
	out := completeAnswer{jobAnswer: completed(id, queue, stamp(now))}
	out.Next = s.next(r, queue, req.Claim)
	write(w, http.StatusOK, out)
}

func (s *server) handleCompleteBatch(w http.ResponseWriter, r *http.Request) {
	var req completeBatchRequest
	if !decode(w, r, &req) {
		return
	}
	queue, now := chi.URLParam(r, "queue"), stamp(time.Now())
	if !s.touch(w, r, queue, strconv.Itoa(len(req.Jobs))) {
		return
	}
	out := completeBatchAnswer{Results: make([]jobAnswer, len(req.Jobs))}
	for i, c := range req.Jobs {
		out.Results[i] = completed(c.ID, queue, now)
	}
	out.Next = s.next(r, queue, req.Claim)
	write(w, http.StatusOK, out)
}

func (s *server) handleLeaseExtend(w http.ResponseWriter, r *http.Request) {
	var req extendRequest
	if !decode(w, r, &req) {
		return
	}
	queue, id := chi.URLParam(r, "queue"), chi.URLParam(r, "id")
	if !s.touch(w, r, queue, id) {
		return
	}
	write(w, http.StatusOK, extendAnswer{LeaseExpiresAt: stamp(time.Now().Add(time.Duration(req.LeaseMs) * time.Millisecond))})
}

// handleSettingsPut takes emqbench's -settings and keeps nothing of them.
func (s *server) handleSettingsPut(w http.ResponseWriter, r *http.Request) {
	var req json.RawMessage
	if !decode(w, r, &req) {
		return
	}
	if !s.touch(w, r, chi.URLParam(r, "queue"), "settings") {
		return
	}
	write(w, http.StatusOK, req)
}

// handleQueueDelete forgets a queue: its count and its hash.
func (s *server) handleQueueDelete(w http.ResponseWriter, r *http.Request) {
	queue := chi.URLParam(r, "queue")
	if err := s.rdb.Del(r.Context(), key(queue)).Err(); err != nil {
		s.problem(w, http.StatusServiceUnavailable, err)
		return
	}
	write(w, http.StatusOK, map[string]int{"removed": s.stock.drop(queue)})
}

// key is a queue's hash, the one key touch.lua writes.
func key(queue string) string { return "emq-minimal:{" + queue + "}" }

// touch makes the request's one FCALL; on an error it answers 503 and
// returns false.
func (s *server) touch(w http.ResponseWriter, r *http.Request, queue, arg string) bool {
	if err := s.rdb.FCall(r.Context(), touchFunction, []string{key(queue)}, arg).Err(); err != nil {
		s.problem(w, http.StatusServiceUnavailable, err)
		return false
	}
	return true
}

// decode reads the request's JSON body into v; on an error it answers 400
// and returns false.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		write(w, http.StatusBadRequest, problem{Title: "bad request body", Detail: err.Error()})
		return false
	}
	return true
}

// write answers v as JSON with its length, as echo_mq does.
func write(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"title":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (s *server) problem(w http.ResponseWriter, status int, err error) {
	s.log.Warn("Redis call failed", "err", err)
	write(w, status, problem{Title: "redis unavailable"})
}

// next is what a complete's claim-next takes (nil when it asks for none),
// as echo_mq answers it.
func (s *server) next(r *http.Request, queue string, c *claimNext) []jobAnswer {
	if c == nil {
		return nil
	}
	n := s.stock.take(r.Context(), queue, c.Count, 0)
	return s.claimed(queue, n, time.Duration(c.LeaseMs)*time.Millisecond)
}
