package http_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

type scheduleView struct {
	Name      string          `json:"name"`
	Cron      string          `json:"cron"`
	EveryMs   int64           `json:"every_ms"`
	Tz        string          `json:"tz"`
	Job       scheduleJobView `json:"job"`
	Overlap   string          `json:"overlap"`
	Misfire   string          `json:"misfire"`
	StartAt   string          `json:"start_at"`
	EndAt     string          `json:"end_at"`
	Paused    bool            `json:"paused"`
	NextRunAt *string         `json:"next_run_at"`
	LastRunAt *string         `json:"last_run_at"`
	LastJobID *string         `json:"last_job_id"`
	Runs      int64           `json:"runs"`
	Skipped   int64           `json:"skipped"`
	Missed    int64           `json:"missed"`
	CreatedAt string          `json:"created_at"`
	UpdatedAt string          `json:"updated_at"`
}

type scheduleJobView struct {
	Payload     any            `json:"payload"`
	Priority    int            `json:"priority"`
	MaxAttempts *int           `json:"max_attempts"`
	Backoff     map[string]any `json:"backoff"`
	Group       *string        `json:"group"`
	ExpiresInMs int64          `json:"expires_in_ms"`
	TimeoutMs   int64          `json:"timeout_ms"`
}

type schedulePage struct {
	Schedules  []scheduleView `json:"schedules"`
	NextCursor *string        `json:"next_cursor"`
}

func schedulePath(q, name string, verb ...string) string {
	return strings.Join(append([]string{"/queues/" + q + "/schedules/" + name}, verb...), "/")
}

// A schedule is put (201, then 200 replaced), read, listed, paused,
// resumed, run and deleted, on every backend; its ticks enqueue jobs.
func TestSchedulesContract(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		body := `{"cron":"0 3 * * *","tz":"Europe/Berlin","job":{"payload":{"report":"daily"},"priority":2,` +
			`"max_attempts":5,"backoff":{"type":"fixed","delay_ms":1000,"max_delay_ms":1000},"group":"tenant-1"},` +
			`"overlap":"skip","misfire":"skip","start_at":"2026-01-01T00:00:00Z","end_at":"2099-01-01T00:00:00Z"}`
		created := must[scheduleView](t, h.do(t, "PUT", schedulePath(q, "nightly"), body), http.StatusCreated)
		if created.Cron != "0 3 * * *" || created.Tz != "Europe/Berlin" || created.Overlap != "skip" || created.Misfire != "skip" ||
			created.Job.Priority != 2 || *created.Job.MaxAttempts != 5 || *created.Job.Group != "tenant-1" ||
			created.Job.Backoff["type"] != "fixed" || created.NextRunAt == nil || created.LastRunAt != nil || created.Runs != 0 {
			t.Fatalf("created %+v", created)
		}
		next := parseStamp(t, *created.NextRunAt)
		if berlin, _ := time.LoadLocation("Europe/Berlin"); next.In(berlin).Hour() != 3 || next.In(berlin).Minute() != 0 {
			t.Errorf("next_run_at %v is not 03:00 in Berlin", next)
		}
		replaced := must[scheduleView](t, h.do(t, "PUT", schedulePath(q, "nightly"), strings.Replace(body, `"skip","misfire"`, `"allow","misfire"`, 1)), http.StatusOK)
		got := must[scheduleView](t, h.do(t, "GET", schedulePath(q, "nightly"), nil), http.StatusOK)
		if replaced.Overlap != "allow" || !reflect.DeepEqual(got, replaced) || got.CreatedAt != created.CreatedAt {
			t.Errorf("replaced %+v, read back %+v", replaced, got)
		}

		paused := must[scheduleView](t, h.do(t, "POST", schedulePath(q, "nightly", "pause"), nil), http.StatusOK)
		if !paused.Paused || paused.NextRunAt != nil {
			t.Errorf("paused: %+v", paused)
		}
		run := must[jobView](t, h.do(t, "POST", schedulePath(q, "nightly", "run"), nil), http.StatusCreated)
		if !strings.HasPrefix(run.ID, "nightly:run:") || run.State != "pending" {
			t.Errorf("run: %+v", run)
		}
		resumed := must[scheduleView](t, h.do(t, "POST", schedulePath(q, "nightly", "resume"), nil), http.StatusOK)
		if resumed.Paused || resumed.NextRunAt == nil || resumed.Runs != 1 || *resumed.LastJobID != run.ID {
			t.Errorf("resumed: %+v", resumed)
		}

		must[scheduleView](t, h.do(t, "PUT", schedulePath(q, "fast"), `{"every_ms":200,"job":{"payload":null}}`), http.StatusCreated)
		page := must[schedulePage](t, h.do(t, "GET", "/queues/"+q+"/schedules?limit=1", nil), http.StatusOK)
		if len(page.Schedules) != 1 || page.Schedules[0].Name != "fast" || page.NextCursor == nil {
			t.Fatalf("first page %+v", page)
		}
		page = must[schedulePage](t, h.do(t, "GET", "/queues/"+q+"/schedules?limit=1&cursor="+*page.NextCursor, nil), http.StatusOK)
		if len(page.Schedules) != 1 || page.Schedules[0].Name != "nightly" || page.NextCursor != nil {
			t.Fatalf("second page %+v", page)
		}

		// The timers fire "fast" every 200 ms: jobs "fast:<tick>".
		deadline := time.Now().Add(5 * time.Second)
		var fast scheduleView
		for time.Now().Before(deadline) {
			if fast = must[scheduleView](t, h.do(t, "GET", schedulePath(q, "fast"), nil), http.StatusOK); fast.Runs >= 3 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if fast.Runs < 3 || fast.LastJobID == nil || fast.EveryMs != 200 || fast.Tz != "" || fast.Overlap != "allow" || fast.Misfire != "once" {
			t.Fatalf("after 5 s: %+v", fast)
		}
		if j := h.get(t, q, *fast.LastJobID); !strings.HasPrefix(j.ID, "fast:") {
			t.Errorf("last job %+v", j)
		}

		if removed := must[map[string]int](t, h.do(t, "DELETE", schedulePath(q, "fast"), nil), http.StatusOK); removed["removed"] != 1 {
			t.Errorf("delete answered %v", removed)
		}
		wantProblem(t, h.do(t, "GET", schedulePath(q, "fast"), nil), http.StatusNotFound, "EMQGONE")
		for _, verb := range []string{"pause", "resume", "run"} {
			wantProblem(t, h.do(t, "POST", schedulePath(q, "fast", verb), nil), http.StatusNotFound, "EMQGONE")
		}
		wantProblem(t, h.do(t, "DELETE", schedulePath(q, "fast"), nil), http.StatusNotFound, "EMQGONE")
	}, withTimers())
}

// A schedule's job template takes expires_in_ms and timeout_ms, and the
// jobs its ticks and runs make have them: a tick's job that nobody claims
// in time expires.
func TestScheduleJobLifetimes(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		body := `{"every_ms":3600000,"job":{"payload":{},"expires_in_ms":600000,"timeout_ms":30000},"paused":true}`
		put := must[scheduleView](t, h.do(t, "PUT", schedulePath(q, "hourly"), body), http.StatusCreated)
		if put.Job.ExpiresInMs != 600000 || put.Job.TimeoutMs != 30000 {
			t.Fatalf("put %+v", put.Job)
		}
		if got := must[scheduleView](t, h.do(t, "GET", schedulePath(q, "hourly"), nil), http.StatusOK); !reflect.DeepEqual(got.Job, put.Job) {
			t.Fatalf("read back %+v, put %+v", got.Job, put.Job)
		}
		run := must[jobView](t, h.do(t, "POST", schedulePath(q, "hourly", "run"), nil), http.StatusCreated)
		if run.TimeoutMs != 30000 || !parseStamp(t, run.ExpiresAt).Equal(parseStamp(t, run.CreatedAt).Add(10*time.Minute)) {
			t.Fatalf("run now made %+v", run)
		}

		// Every 200 ms, each job expiring 100 ms after its tick: none is claimed.
		must[scheduleView](t, h.do(t, "PUT", schedulePath(q, "fast"), `{"every_ms":200,"job":{"payload":null,"expires_in_ms":100}}`), http.StatusCreated)
		deadline := time.Now().Add(5 * time.Second)
		var fast scheduleView
		for time.Now().Before(deadline) {
			if fast = must[scheduleView](t, h.do(t, "GET", schedulePath(q, "fast"), nil), http.StatusOK); fast.Runs >= 1 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if fast.LastJobID == nil {
			t.Fatalf("after 5 s: %+v", fast)
		}
		must[map[string]int](t, h.do(t, "DELETE", schedulePath(q, "fast"), nil), http.StatusOK)
		// Every job the schedule made was created by now: expired 100 ms on.
		time.Sleep(150 * time.Millisecond)
		tick := h.get(t, q, *fast.LastJobID)
		waitPast(t, tick.ExpiresAt)
		for _, j := range h.claim(t, q, `{"count":100,"lease_ms":30000}`) {
			if strings.HasPrefix(j.ID, "fast:") {
				t.Fatalf("claimed %s after its expiry", j.ID)
			}
		}
		if e := h.wantState(t, q, tick.ID, "cancelled"); e.CancelReason != "expired" {
			t.Fatalf("the tick's job: %+v", e)
		}
	}, withTimers())
}

// A bad schedule is refused with the field at fault, and writes nothing.
func TestScheduleValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, redistest.Client(t))
	q := redistest.Queue(t)
	job := `"job":{"payload":1}`
	for _, c := range []struct{ body, field string }{
		{`{` + job + `}`, "cron"},
		{`{"cron":"@daily","every_ms":1000,` + job + `}`, "cron"},
		{`{"cron":"61 * * * *",` + job + `}`, "cron"},
		{`{"cron":"@every 5s",` + job + `}`, "cron"},
		{`{"cron":"* * * * * *",` + job + `}`, "cron"},
		{`{"cron":"@daily","tz":"Mars/Olympus",` + job + `}`, "tz"},
		{`{"cron":"@daily","tz":"Local",` + job + `}`, "tz"},
		{`{"every_ms":1000,"tz":"Europe/Berlin",` + job + `}`, "tz"},
		{`{"every_ms":50,` + job + `}`, "every_ms"},
		{`{"every_ms":1000}`, "job"},
		{`{"every_ms":1000,"job":null}`, "job"},
		{`{"every_ms":1000,"job":{}}`, "job.payload"},
		{`{"every_ms":1000,"job":{"priority":1}}`, "job.payload"},
		{`{"every_ms":1000,"job":{"payload":1,"priority":10}}`, "job.priority"},
		{`{"every_ms":1000,"overlap":"maybe",` + job + `}`, "overlap"},
		{`{"every_ms":1000,"misfire":"all",` + job + `}`, "misfire"},
		{`{"every_ms":1000,"start_at":"2027-01-01T00:00:00Z","end_at":"2026-01-01T00:00:00Z",` + job + `}`, "end_at"},
		{`{"every_ms":1000,"start_at":"tomorrow",` + job + `}`, "start_at"},
		{`{"every_ms":1000,"end_at":"2020-01-01T00:00:00Z",` + job + `}`, "end_at"},
		{`{"cron":"0 0 30 2 *",` + job + `}`, "cron"},
		{`{"cron":"CRON_TZ=Asia/Tokyo 0 3 * * *",` + job + `}`, "cron"},
		{`{"every_ms":1000,"surprise":1,` + job + `}`, "surprise"},
	} {
		before := h.snapshot(t)
		p := wantProblem(t, h.do(t, "PUT", schedulePath(q, "s"), c.body), http.StatusBadRequest, "EMQINVALID")
		wantField(t, p, c.field)
		if after := h.snapshot(t); !reflect.DeepEqual(before, after) {
			t.Errorf("%s: a refused schedule changed Redis", c.body)
		}
	}
	for _, name := range []string{"a:b", "..", strings.Repeat("n", 101)} {
		wantProblem(t, h.do(t, "PUT", schedulePath(q, name), `{"every_ms":1000,`+job+`}`), http.StatusBadRequest, "EMQINVALID")
	}
}

// A schedule's job names its fields by their path, job.payload and
// job.backoff.type, as a batch enqueue names the same flaw in jobs[0]:
// same message, same kind of path.
func TestScheduleJobFieldsAreNamedByPath(t *testing.T) {
	t.Parallel()
	h := newHarness(t, redistest.Client(t), smallLimits)
	q := redistest.Queue(t)
	for _, tmpl := range []string{
		`{}`,
		`{"priority":1}`,
		`{"payload":1,"priority":10}`,
		`{"payload":1,"priority":"high"}`,
		`{"payload":1,"max_attempts":0}`,
		`{"payload":1,"backoff":{"type":"linear","delay_ms":10}}`,
		`{"payload":1,"backoff":{"type":"fixed","delay_ms":10,"max_delay_ms":5}}`,
		`{"payload":1,"group":".."}`,
		`{"payload":1,"expires_in_ms":0}`,
		`{"payload":1,"timeout_ms":99}`,
		`{"payload":1,"bogus":1}`,
	} {
		batch := wantProblem(t, h.do(t, "POST", jobsPath(q)+"/batch", `{"jobs":[`+tmpl+`]}`), http.StatusBadRequest, "EMQINVALID")
		sch := wantProblem(t, h.do(t, "PUT", schedulePath(q, "s"), `{"every_ms":1000,"job":`+tmpl+`}`), http.StatusBadRequest, "EMQINVALID")
		if len(batch.Errors) == 0 || len(sch.Errors) != len(batch.Errors) {
			t.Errorf("job %s: a schedule names %+v, a batch %+v", tmpl, sch.Errors, batch.Errors)
			continue
		}
		for i, e := range batch.Errors {
			want := "job." + strings.TrimPrefix(e.Field, "jobs[0].")
			if got := sch.Errors[i]; got.Field != want || got.Message != e.Message {
				t.Errorf("job %s: a schedule names %s %q, want %s %q as a batch names it", tmpl, got.Field, got.Message, want, e.Message)
			}
		}
	}
	big := `{"payload":"` + strings.Repeat("x", 2000) + `"}`
	p := wantProblem(t, h.do(t, "PUT", schedulePath(q, "s"), `{"every_ms":1000,"job":`+big+`}`), http.StatusRequestEntityTooLarge, "EMQTOOLARGE")
	if !strings.HasPrefix(p.Detail, "job.payload is ") {
		t.Errorf("a payload too large: %q, want it named job.payload", p.Detail)
	}
}
