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

// WithSigningKey signs every request with key instead of sending the key:
// X-EMQ-Timestamp is the time in Unix seconds and X-EMQ-Signature is
// "sha256=" and the hex HMAC-SHA256, under key, of
// "<timestamp>.<METHOD>.<path and query>.<body>" (docs/operating.md,
// "Signed webhooks"). The key never crosses the network, and a signature
// is good for one request only.
//
// The service accepts each signature once, so a request sent twice in the
// same second (two claims with the same body, a call sent again) would be
// refused the second time as a replay. The client never sends a signature
// twice: such a request waits for the next second and is signed again.
// Signing replaces WithAPIKey.
func WithSigningKey(key string) Option {
	return func(c *Client) { c.signer = &signer{key: []byte(key)} }
}

// signer signs requests, and remembers the signatures it sent in the
// current second.
type signer struct {
	key []byte

	mu     sync.Mutex
	second int64               // the Unix second of the signatures in sent
	sent   map[string]struct{} // hex signatures sent in that second
}

// sign sets req's signature headers over body, waiting for the next
// second while the request's signature in this one was sent already. It
// fails only when ctx ends while it waits.
func (s *signer) sign(ctx context.Context, req *http.Request, body []byte) error {
	for {
		now := time.Now()
		ts := strconv.FormatInt(now.Unix(), 10)
		mac := hmac.New(sha256.New, s.key)
		mac.Write([]byte(ts + "." + req.Method + "." + req.URL.RequestURI() + "."))
		mac.Write(body)
		sig := hex.EncodeToString(mac.Sum(nil))
		if s.fresh(now.Unix(), sig) {
			req.Header.Set("X-EMQ-Timestamp", ts)
			req.Header.Set("X-EMQ-Signature", "sha256="+sig)
			return nil
		}
		if !sleep(ctx, time.Unix(now.Unix()+1, 0).Sub(now)) {
			return ctx.Err()
		}
	}
}

// fresh reports whether sig was not sent in second, and counts it sent.
func (s *signer) fresh(second int64, sig string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if second != s.second || s.sent == nil {
		s.second, s.sent = second, map[string]struct{}{}
	}
	if _, dup := s.sent[sig]; dup {
		return false
	}
	s.sent[sig] = struct{}{}
	return true
}
