package examples

import (
	"testing"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// checkProducer runs the language's producer with no argument, with one
// that is not JSON, and through a proxy that loses the answer to its first
// enqueue. (checkWorker runs it with arguments.)
func checkProducer(t *testing.T, lang language, svc service) {
	q := redistest.Queue(t)
	id := producedIDs(t, lang.produce(t, []string{"EMQ_URL=" + svc.URL(), "EMQ_QUEUE=" + q}), 1)[0]
	if j := svc.job(t, q, id); !sameJSON(j.Payload, `{"ms": 1000}`) {
		t.Errorf("the producer with no argument enqueued %s, want {\"ms\": 1000}", j.Payload)
	}

	q = redistest.Queue(t)
	if _, err := lang.tryProduce([]string{"EMQ_URL=" + svc.URL(), "EMQ_QUEUE=" + q}, `{"ms": 1}`, `{"ms": `); err == nil {
		t.Errorf("the producer exited 0 with an argument that is not JSON")
	}
	if n := svc.counts(t, q).total(); n != 0 {
		t.Errorf("the producer enqueued %d jobs though an argument was not JSON, want none", n)
	}

	checkEnqueueRetried(t, lang, svc)
}

// checkEnqueueRetried puts the producer behind a proxy that passes its
// first enqueue to the service but answers it 502, then answers the next
// one 502 itself: the producer sends the job again until it is answered,
// and since the job has an id, the queue holds it once.
func checkEnqueueRetried(t *testing.T, lang language, svc service) {
	t.Helper()
	q := redistest.Queue(t)
	proxy := newProxy(t, svc.URL())
	proxy.Answer("/jobs", answerLost, badGateway)
	id := producedIDs(t, lang.produce(t, []string{"EMQ_URL=" + proxy.URL(), "EMQ_QUEUE=" + q}, `{"ms": 1}`), 1)[0]
	if n := len(proxy.Requests("/jobs")); n != 3 {
		t.Errorf("the producer sent %d enqueues, want 3: two answered 502, then one passed", n)
	}
	if c := svc.counts(t, q); c.total() != 1 || c.Pending != 1 {
		t.Errorf("after an enqueue sent again, the queue holds %+v, want one pending job: "+
			"the producer must give each job an id", c)
	}
	if j := svc.job(t, q, id); !sameJSON(j.Payload, `{"ms": 1}`) {
		t.Errorf("job %s: payload %s, want {\"ms\": 1}", id, j.Payload)
	}
}
