package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// SignatureWindow is how far a signed request's timestamp may be from now.
const SignatureWindow = 5 * time.Minute

// ErrBadSignature refuses a signed request: a wrong or malformed signature,
// a timestamp outside the window, or a replay.
var ErrBadSignature = errors.New("the request signature is not valid")

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

// Signed finds the key that signed req. The signature is
//
//	X-EMQ-Timestamp: <Unix seconds>
//	X-EMQ-Signature: sha256=<hex of HMAC-SHA256(key, timestamp.METHOD.target.body)>
//
// so that a signature is good for one request only, not another route. The
// timestamp must be within SignatureWindow of now, and a signature is
// accepted once (replays tells). Every key is tried, in constant time.
func (kr *Keyring) Signed(ctx context.Context, timestamp, signature string, req Request, now time.Time, replays Replays) (Key, error) {
	sent, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil || now.Sub(time.Unix(sent, 0)).Abs() > SignatureWindow {
		return Key{}, ErrBadSignature
	}
	given, err := hex.DecodeString(strings.TrimPrefix(signature, "sha256="))
	if err != nil || !strings.HasPrefix(signature, "sha256=") {
		return Key{}, ErrBadSignature
	}
	found := -1
	for i, k := range kr.keys {
		if hmac.Equal(given, Sign(k.secret, timestamp, req)) {
			found = i
		}
	}
	if found < 0 {
		return Key{}, ErrBadSignature
	}
	fresh, err := replays.MarkSeen(ctx, hex.EncodeToString(given), 2*SignatureWindow)
	if err != nil {
		return Key{}, err
	}
	if !fresh {
		return Key{}, ErrBadSignature
	}
	return kr.keys[found], nil
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

// RedisReplays remembers signatures in Redis (SET NX with a TTL), so that a
// replay is refused by every service replica.
type RedisReplays struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewRedisReplays keeps seen signatures under prefix + ":sig:".
func NewRedisReplays(rdb redis.UniversalClient, prefix string) *RedisReplays {
	return &RedisReplays{rdb: rdb, prefix: prefix}
}

// MarkSeen reports whether sig is new, and remembers it for ttl.
func (r *RedisReplays) MarkSeen(ctx context.Context, sig string, ttl time.Duration) (bool, error) {
	return r.rdb.SetNX(ctx, r.prefix+":sig:"+sig, 1, ttl).Result()
}
