package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// SignatureWindow is how far a signed request's timestamp may be from now.
const SignatureWindow = 5 * time.Minute

// ErrBadSignature refuses a signed request. Every refusal is one of the
// errors below, which wrap it and say which check failed, as Stripe's and
// Standard Webhooks' verifiers do: a sender whose clock is off learns
// that, not that its key is wrong.
var ErrBadSignature = errors.New("the request signature is not valid")

var (
	// ErrSignatureTimestamp: X-EMQ-Timestamp is absent or not Unix seconds.
	ErrSignatureTimestamp = fmt.Errorf("%w: X-EMQ-Timestamp must be the time in Unix seconds", ErrBadSignature)
	// ErrSignatureSkew: the timestamp is further than SignatureWindow from
	// the service's clock.
	ErrSignatureSkew = fmt.Errorf("%w: the timestamp is outside the tolerance of %d s", ErrBadSignature,
		int(SignatureWindow.Seconds()))
	// ErrSignatureForm: X-EMQ-Signature is not "sha256=" and 64 hex digits.
	ErrSignatureForm = fmt.Errorf("%w: X-EMQ-Signature must be sha256= and 64 hex digits", ErrBadSignature)
	// ErrSignatureMismatch: no key's HMAC of the request is the signature.
	ErrSignatureMismatch = fmt.Errorf("%w: the signature does not match the request under any key", ErrBadSignature)
	// ErrSignatureReplay: the signature was accepted once already.
	ErrSignatureReplay = fmt.Errorf("%w: the signature was accepted once already (a replay)", ErrBadSignature)
)

// Replays remembers signatures for the window, so that each is accepted
// once. MarkSeen reports whether sig is new, and remembers it for ttl.
type Replays interface {
	MarkSeen(ctx context.Context, sig string, ttl time.Duration) (bool, error)
}

// Request is what a signature covers: the method, the target (the path
// and query as sent, e.g. "/queues/hooks/jobs?x=1"), and the body.
type Request struct {
	Method string
	Target string
	Body   []byte
}

// Signature is what a signed request's headers say:
//
//	X-EMQ-Timestamp: <Unix seconds>
//	X-EMQ-Signature: sha256=<hex of HMAC-SHA256(key, timestamp.METHOD.target.body)>
//
// so that a signature is good for one request only, not another route.
type Signature struct {
	timestamp string
	mac       []byte
}

// ParseSignature checks a signed request's headers before anything reads
// its body: the timestamp is within SignatureWindow of now, and the
// signature is "sha256=" and 64 hex digits. A request that fails here is
// refused without its body being read.
func ParseSignature(timestamp, signature string, now time.Time) (Signature, error) {
	sent, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return Signature{}, ErrSignatureTimestamp
	}
	if skew := now.Sub(time.Unix(sent, 0)); skew.Abs() > SignatureWindow {
		return Signature{}, skewError(skew)
	}
	digits, ok := strings.CutPrefix(signature, "sha256=")
	mac, err := hex.DecodeString(digits)
	if !ok || err != nil || len(mac) != sha256.Size {
		return Signature{}, ErrSignatureForm
	}
	return Signature{timestamp: timestamp, mac: mac}, nil
}

// skewError is ErrSignatureSkew, saying how far the timestamp is from
// now: behind it when skew > 0.
func skewError(skew time.Duration) error {
	way := "behind"
	if skew < 0 {
		way = "ahead of"
	}
	return fmt.Errorf("%w (it is %d s %s the service's clock)", ErrSignatureSkew, int64(skew.Abs().Seconds()), way)
}

// Verifier checks a signed request against every key as its body is
// written to it, so that the body need not be held to be checked.
type Verifier struct {
	kr   *Keyring
	sig  Signature
	macs []hash.Hash
}

// NewVerifier starts checking sig over a request of method to target;
// write the body to it, then ask Key.
func (kr *Keyring) NewVerifier(sig Signature, method, target string) *Verifier {
	v := &Verifier{kr: kr, sig: sig, macs: make([]hash.Hash, len(kr.keys))}
	for i, k := range kr.keys {
		v.macs[i] = hmac.New(sha256.New, k.secret)
		v.macs[i].Write([]byte(sig.timestamp + "." + method + "." + target + "."))
	}
	return v
}

// Write adds p, the next part of the body, to every key's HMAC.
func (v *Verifier) Write(p []byte) (int, error) {
	for _, mac := range v.macs {
		mac.Write(p)
	}
	return len(p), nil
}

// Key finds the key that signed the body written so far. Every key is
// compared, in constant time, whatever matches first; a signature is
// accepted once (replays tells).
func (v *Verifier) Key(ctx context.Context, replays Replays) (Key, error) {
	found := -1
	for i, mac := range v.macs {
		if hmac.Equal(v.sig.mac, mac.Sum(nil)) {
			found = i
		}
	}
	if found < 0 {
		return Key{}, ErrSignatureMismatch
	}
	fresh, err := replays.MarkSeen(ctx, hex.EncodeToString(v.sig.mac), 2*SignatureWindow)
	if err != nil {
		return Key{}, err
	}
	if !fresh {
		return Key{}, ErrSignatureReplay
	}
	return v.kr.keys[found], nil
}

// Signed finds the key that signed req, given its headers: ParseSignature,
// then a Verifier over req.Body.
func (kr *Keyring) Signed(ctx context.Context, timestamp, signature string, req Request, now time.Time, replays Replays) (Key, error) {
	sig, err := ParseSignature(timestamp, signature, now)
	if err != nil {
		return Key{}, err
	}
	v := kr.NewVerifier(sig, req.Method, req.Target)
	v.Write(req.Body)
	return v.Key(ctx, replays)
}

// Sign is the HMAC-SHA256 under secret of timestamp, method, target and
// body joined by ".": what a webhook sender puts, hex-encoded after
// "sha256=", in X-EMQ-Signature.
func Sign(secret []byte, timestamp string, req Request) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(timestamp + "." + req.Method + "." + req.Target + "."))
	mac.Write(req.Body)
	return mac.Sum(nil)
}

// ReplayKeyPrefix begins the Redis key of each signature seen. It is
// outside every EMQ_PREFIX, so that a signed request accepted by one
// deployment is refused by every other that shares the Redis.
const ReplayKeyPrefix = "emq-signature:"

// RedisReplays remembers signatures in Redis (SET NX with a TTL), so that a
// replay is refused by every service replica and every deployment on the
// same Redis.
type RedisReplays struct {
	rdb redis.UniversalClient
}

// NewRedisReplays keeps seen signatures under ReplayKeyPrefix.
func NewRedisReplays(rdb redis.UniversalClient) *RedisReplays {
	return &RedisReplays{rdb: rdb}
}

// MarkSeen reports whether sig is new, and remembers it for ttl.
func (r *RedisReplays) MarkSeen(ctx context.Context, sig string, ttl time.Duration) (bool, error) {
	return r.rdb.SetNX(ctx, ReplayKeyPrefix+sig, 1, ttl).Result()
}
