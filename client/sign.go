package client

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// borrowSeconds is how far before now a signature's timestamp may be put
// when the signatures of the seconds after it were sent already. The
// service takes timestamps within 300 s of its clock; 30 s stays far from
// that edge whatever the two clocks' skew.
const borrowSeconds = 30

// WithSigningKey signs every request with key instead of sending the key:
// X-EMQ-Timestamp is the time in Unix seconds and X-EMQ-Signature is
// "sha256=" and the hex HMAC-SHA256, under key, of
// "<timestamp>.<METHOD>.<path and query>.<body>" (docs/operating.md,
// "Signed webhooks"). The key never crosses the network, and a signature
// is good for one request only.
//
// The service accepts each signature once, so two byte-identical requests
// (a worker's claims, one job's extends) must not carry the same
// timestamp. The client never sends a signature twice: a request whose
// signature of this second was sent already is stamped with the latest
// earlier second whose was not, up to 30 s back (it waits for the next
// second only when all 31 are taken). It remembers the signatures this
// process sent with each key for those 31 seconds, across Clients. So a
// burst of up to 31 byte-identical requests never waits, but past it they
// go at one a second: a signed Work whose claims repeat (one slot, jobs
// shorter than a second) works about one job a second; authenticate such
// a worker with WithAPIKey.
// Processes signing with the same key must not send byte-identical
// requests: Work's claims carry the worker's name, unique by default.
// Signing replaces WithAPIKey.
func WithSigningKey(key string) Option {
	return func(c *Client) { c.signer = &signer{key: []byte(key), sent: sentWith(key)} }
}

// signer signs requests with one key.
type signer struct {
	key  []byte
	sent *sentSignatures
}

// sign sets req's signature headers over body. It fails only when ctx ends
// while it waits for a second with a signature free.
func (s *signer) sign(ctx context.Context, req *http.Request, body []byte) error {
	for {
		now := time.Now()
		for ts := now.Unix(); ts >= now.Unix()-borrowSeconds; ts-- {
			stamp := strconv.FormatInt(ts, 10)
			mac := hmac.New(sha256.New, s.key)
			mac.Write([]byte(stamp + "." + req.Method + "." + req.URL.RequestURI() + "."))
			mac.Write(body)
			sig := hex.EncodeToString(mac.Sum(nil))
			if s.sent.take(now.Unix(), ts, sig) {
				req.Header.Set("X-EMQ-Timestamp", stamp)
				req.Header.Set("X-EMQ-Signature", "sha256="+sig)
				return nil
			}
		}
		if !sleep(ctx, time.Unix(now.Unix()+1, 0).Sub(now)) {
			return ctx.Err()
		}
	}
}

// sentSignatures are the signatures sent with one key, by second, for the
// last borrowSeconds+1 seconds.
type sentSignatures struct {
	mu       sync.Mutex
	bySecond map[int64]map[string]struct{}
}

// signed holds each key's sentSignatures, for the whole process.
var signed = struct {
	sync.Mutex
	byKey map[string]*sentSignatures
}{byKey: map[string]*sentSignatures{}}

// sentWith returns the signatures sent with key.
func sentWith(key string) *sentSignatures {
	signed.Lock()
	defer signed.Unlock()
	s := signed.byKey[key]
	if s == nil {
		s = &sentSignatures{bySecond: map[int64]map[string]struct{}{}}
		signed.byKey[key] = s
	}
	return s
}

// take reports whether sig, stamped with second ts, was not sent yet, and
// counts it sent. It forgets the seconds now has left behind.
func (s *sentSignatures) take(now, ts int64, sig string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for second := range s.bySecond {
		if second < now-borrowSeconds {
			delete(s.bySecond, second)
		}
	}
	sigs := s.bySecond[ts]
	if sigs == nil {
		sigs = map[string]struct{}{}
		s.bySecond[ts] = sigs
	}
	if _, dup := sigs[sig]; dup {
		return false
	}
	sigs[sig] = struct{}{}
	return true
}
