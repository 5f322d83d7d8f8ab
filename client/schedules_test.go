package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

func TestScheduleLifecycle(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	end := start.Add(365 * 24 * time.Hour)
	// A dot and a dash are allowed in a name and must reach the service unmangled.
	const name = "weekly.report-1"
	s, created, err := c.PutSchedule(ctx, q, name, client.ScheduleRequest{
		Cron: "0 9 * * 1", TZ: "Europe/Berlin",
		Job: client.ScheduleJob{Payload: map[string]string{"report": "weekly"}, Priority: 3, MaxAttempts: 5,
			Backoff: &client.Backoff{Fixed: true, Delay: time.Minute}, Group: "tenant-1",
			ExpiresIn: 10 * time.Minute, Timeout: 30 * time.Second},
		Overlap: client.OverlapSkip, Misfire: client.MisfireSkip, StartAt: start, EndAt: end,
	})
	if err != nil || !created {
		t.Fatalf("first put: created %v, err %v; want a new schedule", created, err)
	}
	if s.Name != name || s.Cron != "0 9 * * 1" || s.TZ != "Europe/Berlin" || s.Every != 0 ||
		s.Overlap != client.OverlapSkip || s.Misfire != client.MisfireSkip || s.Paused ||
		!s.StartAt.Equal(start) || !s.EndAt.Equal(end) || s.LastRunAt != nil || s.LastJobID != nil ||
		s.Runs != 0 || s.Skipped != 0 || s.Missed != 0 || s.CreatedAt.IsZero() || s.UpdatedAt.IsZero() {
		t.Fatalf("first put answered %+v", s)
	}
	if raw, ok := s.Job.Payload.(json.RawMessage); !ok || string(raw) != `{"report":"weekly"}` ||
		s.Job.Priority != 3 || s.Job.MaxAttempts != 5 || s.Job.Group != "tenant-1" ||
		s.Job.Backoff == nil || !s.Job.Backoff.Fixed || s.Job.Backoff.Delay != time.Minute ||
		s.Job.ExpiresIn != 10*time.Minute || s.Job.Timeout != 30*time.Second {
		t.Fatalf("first put answered the job %#v (backoff %+v)", s.Job, s.Job.Backoff)
	}
	if s.NextRunAt == nil || !s.NextRunAt.After(time.Now()) || s.NextRunAt.Weekday() != time.Monday ||
		s.NextRunAt.Sub(time.Now()) > 8*24*time.Hour {
		t.Fatalf("first put's next run %v, want the next Monday", s.NextRunAt)
	}

	replaced, created, err := c.PutSchedule(ctx, q, name, client.ScheduleRequest{Every: time.Hour, Job: client.ScheduleJob{Payload: "v2"}})
	if err != nil || created {
		t.Fatalf("second put: created %v, err %v; want the schedule replaced", created, err)
	}
	if replaced.Every != time.Hour || replaced.Cron != "" || replaced.TZ != "" || replaced.Overlap != client.OverlapAllow ||
		replaced.Misfire != client.MisfireOnce || !replaced.StartAt.IsZero() || !replaced.EndAt.IsZero() ||
		replaced.Job.Backoff != nil || replaced.Job.ExpiresIn != 0 || replaced.Job.Timeout != 0 || !replaced.CreatedAt.Equal(s.CreatedAt) || replaced.UpdatedAt.Before(s.UpdatedAt) ||
		replaced.NextRunAt == nil || replaced.NextRunAt.UnixMilli()%time.Hour.Milliseconds() != 0 {
		t.Fatalf("second put answered %+v", replaced)
	}
	got, err := c.Schedule(ctx, q, name)
	if err != nil || got.Every != time.Hour || !got.NextRunAt.Equal(*replaced.NextRunAt) {
		t.Fatalf("Schedule: %+v, %v; want the replaced schedule", got, err)
	}
	if raw, _ := got.Job.Payload.(json.RawMessage); string(raw) != `"v2"` {
		t.Fatalf("Schedule's job payload %#v, want \"v2\"", got.Job.Payload)
	}

	paused, err := c.PauseSchedule(ctx, q, name)
	if err != nil || !paused.Paused || paused.NextRunAt != nil {
		t.Fatalf("pause: %+v, %v; want paused with no next run", paused, err)
	}
	if again, err := c.PauseSchedule(ctx, q, name); err != nil || !again.Paused || again.NextRunAt != nil {
		t.Fatalf("a repeated pause: %+v, %v; want it paused still", again, err)
	}
	resumed, err := c.ResumeSchedule(ctx, q, name)
	if err != nil || resumed.Paused || resumed.NextRunAt == nil || !resumed.NextRunAt.After(time.Now()) {
		t.Fatalf("resume: %+v, %v; want a next run after now", resumed, err)
	}

	job, err := c.RunSchedule(ctx, q, name)
	if err != nil || !strings.HasPrefix(job.ID, name+":run:") || job.Queue != q || job.State != client.StatePending ||
		string(job.Payload) != `"v2"` {
		t.Fatalf("run: %+v, %v; want a pending job %s:run:<ms>", job, err, name)
	}
	if _, err := strconv.ParseInt(strings.TrimPrefix(job.ID, name+":run:"), 10, 64); err != nil {
		t.Fatalf("run's job id %q does not end in ms: %v", job.ID, err)
	}
	if j, err := c.Job(ctx, q, job.ID); err != nil || j.State != client.StatePending {
		t.Fatalf("the run's job: %+v, %v", j, err)
	}
	after, err := c.Schedule(ctx, q, name)
	if err != nil || after.Runs != 1 || after.LastJobID == nil || *after.LastJobID != job.ID || after.LastRunAt == nil {
		t.Fatalf("after the run the schedule is %+v, %v; want one run, of job %s", after, err, job.ID)
	}

	if err := c.DeleteSchedule(ctx, q, name); err != nil {
		t.Fatalf("delete: %v", err)
	}
	_, err = c.Schedule(ctx, q, name)
	var e *client.Error
	if !errors.Is(err, client.ErrGone) || !errors.As(err, &e) || e.Status != http.StatusNotFound {
		t.Fatalf("Schedule after the delete: %v, want a 404 ErrGone", err)
	}
	if err := c.DeleteSchedule(ctx, q, name); !errors.Is(err, client.ErrGone) {
		t.Fatalf("a second delete: %v, want ErrGone", err)
	}
	for verb, call := range map[string]func(context.Context, string, string) (client.Schedule, error){
		"pause": c.PauseSchedule, "resume": c.ResumeSchedule} {
		if _, err := call(ctx, q, name); !errors.Is(err, client.ErrGone) {
			t.Fatalf("%s of a deleted schedule: %v, want ErrGone", verb, err)
		}
	}
	if _, err := c.RunSchedule(ctx, q, name); !errors.Is(err, client.ErrGone) {
		t.Fatalf("run of a deleted schedule: %v, want ErrGone", err)
	}
	if j, err := c.Job(ctx, q, job.ID); err != nil || j.ID != job.ID {
		t.Fatalf("the run's job after the delete: %+v, %v; want it kept", j, err)
	}
}

func TestSchedulesAcrossPages(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	if all, err := c.Schedules(ctx, q); err != nil || len(all) != 0 {
		t.Fatalf("Schedules of a queue with none: %v, %v", all, err)
	}
	if page, next, err := c.ListSchedules(ctx, q, "", 0); err != nil || len(page) != 0 || next != "" {
		t.Fatalf("ListSchedules of a queue with none: %v, %q, %v", page, next, err)
	}
	want := []string{"a", "b", "c", "d", "e"}
	for _, name := range []string{"d", "b", "e", "a", "c"} {
		if _, _, err := c.PutSchedule(ctx, q, name, client.ScheduleRequest{Cron: "@daily", Job: client.ScheduleJob{Payload: name}}); err != nil {
			t.Fatal(err)
		}
	}
	var pages [][]string
	cursor := ""
	for range len(want) + 1 {
		page, next, err := c.ListSchedules(ctx, q, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range page {
			names = append(names, s.Name)
			if s.Cron != "@daily" || s.TZ != "UTC" {
				t.Fatalf("listed %+v, want cron @daily in UTC", s)
			}
		}
		pages = append(pages, names)
		if next == "" {
			break
		}
		cursor = next
	}
	if len(pages) != 3 || !slices.Equal(slices.Concat(pages...), want) || len(pages[0]) != 2 || len(pages[2]) != 1 {
		t.Fatalf("pages of 2: %v, want %v in pages of 2, 2, 1", pages, want)
	}
	all, err := c.Schedules(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range all {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("Schedules: %v, want %v", names, want)
	}
}

func TestInvalidScheduleNamesItsField(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	job := client.ScheduleJob{Payload: "x"}
	for _, tc := range []struct {
		what  string
		name  string
		req   client.ScheduleRequest
		field string
	}{
		{"both cron and every", "s", client.ScheduleRequest{Cron: "* * * * *", Every: time.Minute, Job: job}, "cron"},
		{"neither cron nor every", "s", client.ScheduleRequest{Job: job}, "cron"},
		{"an every under 1 ms", "s", client.ScheduleRequest{Every: time.Microsecond, Job: job}, "every_ms"},
		{"a tz with every", "s", client.ScheduleRequest{Every: time.Minute, TZ: "Europe/Berlin", Job: job}, "tz"},
		{"a name that is not one", "not/a name", client.ScheduleRequest{Every: time.Minute, Job: job}, "name"},
	} {
		_, created, err := c.PutSchedule(ctx, q, tc.name, tc.req)
		var e *client.Error
		if created || !errors.Is(err, client.ErrInvalid) || !errors.As(err, &e) || e.Status != http.StatusBadRequest {
			t.Fatalf("put with %s: created %v, %v; want a 400 ErrInvalid", tc.what, created, err)
		}
		if !slices.ContainsFunc(e.Fields, func(f client.FieldError) bool { return f.Field == tc.field && f.Message != "" }) {
			t.Fatalf("put with %s: field errors %+v, want one on %s", tc.what, e.Fields, tc.field)
		}
	}
	if all, err := c.Schedules(ctx, q); err != nil || len(all) != 0 {
		t.Fatalf("after the refused puts the queue has schedules %+v, %v; want none", all, err)
	}
}

func TestScheduleFiresEvery(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	const name, every = "tick", 200 * time.Millisecond
	put := time.Now()
	if _, _, err := c.PutSchedule(ctx, q, name, client.ScheduleRequest{Every: every, Job: client.ScheduleJob{Payload: map[string]int{"n": 1}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.DeleteSchedule(context.Background(), q, name) })

	// Each tick's job is pending at once, with the id "tick:<tick in ms>".
	var ticks []int64
	for deadline := time.Now().Add(10 * time.Second); len(ticks) < 3 && time.Now().Before(deadline); {
		jobs, err := c.Claim(ctx, q, client.ClaimRequest{Count: 10, Wait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			ms, err := strconv.ParseInt(strings.TrimPrefix(j.ID, name+":"), 10, 64)
			if err != nil || !strings.HasPrefix(j.ID, name+":") || ms%every.Milliseconds() != 0 ||
				string(j.Payload) != `{"n":1}` {
				t.Fatalf("claimed %+v, want a job %s:<a multiple of %d ms> with payload {\"n\":1}", j, name, every.Milliseconds())
			}
			if tick := time.UnixMilli(ms); tick.Before(put.Add(-time.Second)) || tick.After(time.Now().Add(time.Second)) {
				t.Fatalf("job %s is of a tick at %v, want one after the put at %v", j.ID, tick, put)
			}
			ticks = append(ticks, ms)
		}
	}
	if len(ticks) < 3 {
		t.Fatalf("in 10 s the schedule fired the ticks %v, want 3 or more", ticks)
	}
	slices.Sort(ticks)
	if len(slices.Compact(slices.Clone(ticks))) != len(ticks) {
		t.Fatalf("ticks %v: one fired twice", ticks)
	}
	s, err := c.Schedule(ctx, q, name)
	if err != nil || s.Runs < int64(len(ticks)) || s.LastJobID == nil || !strings.HasPrefix(*s.LastJobID, name+":") ||
		s.LastRunAt == nil || s.NextRunAt == nil || s.NextRunAt.UnixMilli()%every.Milliseconds() != 0 {
		t.Fatalf("after %d ticks the schedule is %+v, %v", len(ticks), s, err)
	}
}

// A Schedule goes to JSON and back as the API writes it: every_ms in ms,
// the times that are null as null.
func TestScheduleJSON(t *testing.T) {
	const wire = `{"name":"n","every_ms":60000,"job":{"payload":{"a":1},"priority":2,"max_attempts":4,` +
		`"backoff":{"type":"fixed","delay_ms":1000,"max_delay_ms":5000},"group":"g","expires_in_ms":600000,"timeout_ms":30000},"overlap":"skip","misfire":"once",` +
		`"start_at":"2026-12-01T00:00:00Z","paused":true,"next_run_at":null,"last_run_at":"2026-12-02T04:55:00.003Z",` +
		`"last_job_id":"n:1764651300000","runs":1,"skipped":2,"missed":3,"created_at":"2026-12-01T09:30:00Z",` +
		`"updated_at":"2026-12-01T09:30:00Z"}`
	var s client.Schedule
	if err := json.Unmarshal([]byte(wire), &s); err != nil {
		t.Fatal(err)
	}
	if s.Every != time.Minute || s.NextRunAt != nil || s.LastRunAt == nil || !s.LastRunAt.Equal(time.Date(2026, 12, 2, 4, 55, 0, 3e6, time.UTC)) ||
		*s.LastJobID != "n:1764651300000" || s.Job.Backoff == nil || *s.Job.Backoff != (client.Backoff{Fixed: true, Delay: time.Second, MaxDelay: 5 * time.Second}) ||
		s.Job.MaxAttempts != 4 || s.Job.Group != "g" || s.Job.ExpiresIn != 10*time.Minute || s.Job.Timeout != 30*time.Second || s.Overlap != client.OverlapSkip || !s.Paused || !s.EndAt.IsZero() {
		t.Fatalf("decoded %+v", s)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal([]byte(wire), &want)
	gotJSON, _ := json.Marshal(got) // keys sorted, for comparing
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Fatalf("encoded\n%s\nwant\n%s", gotJSON, wantJSON)
	}
}
