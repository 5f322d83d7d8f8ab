package auth

import (
	"context"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	readerKey = "reader-key-0123456789"
	workerKey = "worker-key-0123456789"
	adminKey  = "admin-key-01234567890"
)

func keyring(t *testing.T) *Keyring {
	t.Helper()
	kr, err := ParseKeys("reader:" + readerKey + ", worker:" + workerKey + ",admin:" + adminKey)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

func TestParseKeysRefusesBadSpecsWithoutQuotingKeys(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"root:" + adminKey, adminKey, "admin:short-secret", "admin:"} {
		_, err := ParseKeys(spec)
		if err == nil {
			t.Errorf("ParseKeys(%q) accepted it", spec)
			continue
		}
		if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), adminKey) {
			t.Errorf("ParseKeys error %q quotes the key", err)
		}
	}
	if kr, err := ParseKeys(" "); err != nil || !kr.Open() {
		t.Fatalf("an empty spec gave %v, %v; want an open keyring", kr, err)
	}
}

func TestKeysAreNamedByTheOperatorNeverByTheirSecret(t *testing.T) {
	t.Parallel()
	kr, err := ParseKeys("ci-deploy:admin:" + adminKey + ", worker:" + workerKey + ",dash.board_1:reader:" + readerKey + ":with:colons")
	if err != nil {
		t.Fatal(err)
	}
	for header, want := range map[string]Key{
		"Bearer " + adminKey:                   {Name: "ci-deploy", Role: Admin},
		"Bearer " + workerKey:                  {Name: "worker-2", Role: Worker},
		"Bearer " + readerKey + ":with:colons": {Name: "dash.board_1", Role: Reader},
	} {
		key, err := kr.Bearer(header)
		if err != nil || key.Name != want.Name || key.Role != want.Role {
			t.Errorf("Bearer(%.14s…) = %q %v, %v; want %q %v", header, key.Name, key.Role, err, want.Name, want.Role)
		}
	}
	for spec, why := range map[string]string{
		"ops:admin:" + adminKey + ",ops:worker:" + workerKey:  "a name twice",
		"worker-2:admin:" + adminKey + ",worker:" + workerKey: "a name an unnamed key has",
		"my key:admin:" + adminKey:                            "a space in a name",
		strings.Repeat("n", 65) + ":admin:" + adminKey:        "a name of 65 characters",
		"ops:root:" + adminKey:                                "an unknown role",
		"ops:admin:short-secret":                              "a short key",
		"ops:" + adminKey:                                     "no role",
		"admin:worker:" + adminKey:                            "a name that is a role's word",
	} {
		if _, err := ParseKeys(spec); err == nil || strings.Contains(err.Error(), adminKey) || strings.Contains(err.Error(), "short-secret") {
			t.Errorf("%s: ParseKeys gave %v; want a refusal that quotes no key", why, err)
		}
	}
}

func TestBearerFindsTheKeyAndItsRole(t *testing.T) {
	t.Parallel()
	kr := keyring(t)
	for header, want := range map[string]Role{
		"Bearer " + readerKey: Reader, "Bearer " + workerKey: Worker, "bearer " + adminKey: Admin,
	} {
		key, err := kr.Bearer(header)
		if err != nil || key.Role != want {
			t.Errorf("Bearer(%.12s…) = %v, %v; want role %v", header, key.Role, err, want)
		}
		if strings.Contains(key.Name, strings.TrimPrefix(strings.ToLower(header), "bearer ")) {
			t.Errorf("the key's name %q reveals the key", key.Name)
		}
	}
	for header, want := range map[string]error{
		"": ErrNoKey, "Bearer nope-nope-nope-nope": ErrBadKey, "Basic " + adminKey: ErrBadKey,
		"Bearer " + adminKey + "x": ErrBadKey, adminKey: ErrBadKey,
	} {
		if _, err := kr.Bearer(header); !errors.Is(err, want) {
			t.Errorf("Bearer(%q) = %v, want %v", header, err, want)
		}
	}
}

// memReplays is an in-memory Replays for the signature tests.
type memReplays struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (m *memReplays) MarkSeen(_ context.Context, sig string, _ time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen[sig] {
		return false, nil
	}
	m.seen[sig] = true
	return true, nil
}

func TestSignedRequests(t *testing.T) {
	t.Parallel()
	kr := keyring(t)
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"payload":{"n":1}}`)
	req := func(body []byte) Request { return Request{Method: "POST", Target: "/queues/hooks/jobs", Body: body} }
	sign := func(secret string, at time.Time, body []byte) (string, string) {
		ts := strconv.FormatInt(at.Unix(), 10)
		return ts, "sha256=" + hex.EncodeToString(Sign([]byte(secret), ts, req(body)))
	}
	replays := &memReplays{seen: map[string]bool{}}

	ts, sig := sign(workerKey, now, body)
	key, err := kr.Signed(context.Background(), ts, sig, req(body), now, replays)
	if err != nil || key.Role != Worker {
		t.Fatalf("a good signature gave %v, %v; want the worker key", key.Role, err)
	}
	if _, err := kr.Signed(context.Background(), ts, sig, req(body), now, replays); !errors.Is(err, ErrSignatureReplay) {
		t.Fatalf("a replay gave %v, want ErrSignatureReplay", err)
	}
	// Each refusal is an ErrBadSignature that says which check failed.
	cases := map[string]struct {
		make func() (string, string, []byte)
		want error
	}{
		"another body": {func() (string, string, []byte) { ts, sig := sign(workerKey, now, body); return ts, sig, []byte(`{}`) },
			ErrSignatureMismatch},
		"an unknown key": {func() (string, string, []byte) {
			ts, sig := sign("not-a-key-at-all-123", now, body)
			return ts, sig, body
		}, ErrSignatureMismatch},
		"6 minutes old": {func() (string, string, []byte) {
			ts, sig := sign(workerKey, now.Add(-6*time.Minute), body)
			return ts, sig, body
		}, ErrSignatureSkew},
		"6 minutes ahead": {func() (string, string, []byte) {
			ts, sig := sign(workerKey, now.Add(6*time.Minute), body)
			return ts, sig, body
		}, ErrSignatureSkew},
		"no sha256= prefix": {func() (string, string, []byte) { ts, sig := sign(workerKey, now, body); return ts, sig[7:], body },
			ErrSignatureForm},
		"not hex": {func() (string, string, []byte) { ts, _ := sign(workerKey, now, body); return ts, "sha256=zz", body },
			ErrSignatureForm},
		"timestamp not a number": {func() (string, string, []byte) {
			_, sig := sign(workerKey, now, body)
			return "soon", sig, body
		}, ErrSignatureTimestamp},
	}
	ts, sig = sign(workerKey, now, body)
	other := Request{Method: "DELETE", Target: "/queues/victim?force=true", Body: body}
	if _, err := kr.Signed(context.Background(), ts, sig, other, now, replays); !errors.Is(err, ErrSignatureMismatch) {
		t.Errorf("a signature used on another route: got %v, want ErrSignatureMismatch", err)
	}
	for name, c := range cases {
		ts, sig, b := c.make()
		_, err := kr.Signed(context.Background(), ts, sig, req(b), now, replays)
		if !errors.Is(err, c.want) || !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: got %v, want %v, an ErrBadSignature", name, err, c.want)
		}
	}
	for _, c := range []struct {
		at   time.Time
		want string
	}{
		{now.Add(-6 * time.Minute), "the request signature is not valid: the timestamp is outside the tolerance of 300 s (it is 360 s behind the service's clock)"},
		{now.Add(7 * time.Minute), "the request signature is not valid: the timestamp is outside the tolerance of 300 s (it is 420 s ahead of the service's clock)"},
	} {
		ts, sig := sign(workerKey, c.at, body)
		if _, err := kr.Signed(context.Background(), ts, sig, req(body), now, replays); err == nil || err.Error() != c.want {
			t.Errorf("a timestamp of %v at %v: %v, want %q", c.at, now, err, c.want)
		}
	}
	ts, sig = sign(adminKey, now.Add(-4*time.Minute), body)
	if key, err := kr.Signed(context.Background(), ts, sig, req(body), now, replays); err != nil || key.Role != Admin {
		t.Fatalf("a 4-minute-old signature gave %v, %v; want it accepted", key.Role, err)
	}
}
