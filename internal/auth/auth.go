// Package auth decides who may call the API: API keys with roles, given as a
// bearer token or, for webhook senders that cannot set one, as an
// HMAC-SHA256 signature of the request body.
//
// Keys are compared in constant time, and neither a key nor a signature is
// ever logged: a key is known in logs and events by its Name, a short hash.
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Role is what a key may do. Each role may do everything the ones below it
// may.
type Role int

// The roles, least first. Open marks routes that need no key at all.
const (
	Open   Role = iota
	Reader      // GET: queues, jobs, events
	Worker      // and the worker plane: enqueue, claim, extend, complete, fail, cancel
	Admin       // and the operator plane: pause, drain, obliterate, retry, ...
)

var roleNames = map[string]Role{"reader": Reader, "worker": Worker, "admin": Admin}

// String is the role's name as EMQ_API_KEYS spells it.
func (r Role) String() string {
	for name, role := range roleNames {
		if role == r {
			return name
		}
	}
	return "open"
}

// Key is one API key.
type Key struct {
	// Name identifies the key in logs and events without revealing it: its
	// role and the first 8 hex digits of its SHA-256.
	Name   string
	Role   Role
	secret []byte
}

// ErrNoKey and ErrBadKey are the refusals of Keyring.Bearer.
var (
	ErrNoKey  = errors.New("no API key given")
	ErrBadKey = errors.New("the API key is not valid")
)

// MinKeyLength is the shortest key accepted: shorter ones can be guessed.
const MinKeyLength = 16

// Keyring holds the service's keys.
type Keyring struct {
	keys []Key
}

// ParseKeys reads EMQ_API_KEYS: comma-separated "role:key" pairs, roles
// reader, worker and admin. An empty spec gives an empty keyring (the API
// is open).
func ParseKeys(spec string) (*Keyring, error) {
	kr := &Keyring{}
	for i, pair := range strings.Split(spec, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, secret, ok := strings.Cut(pair, ":")
		role, known := roleNames[name]
		switch {
		case !ok || !known:
			return nil, fmt.Errorf("key %d: want role:key with role reader, worker or admin", i+1)
		case len(secret) < MinKeyLength:
			return nil, fmt.Errorf("key %d: a key must be at least %d characters", i+1, MinKeyLength)
		}
		sum := sha256.Sum256([]byte(secret))
		kr.keys = append(kr.keys, Key{Name: name + "-" + hex.EncodeToString(sum[:4]), Role: role, secret: []byte(secret)})
	}
	return kr, nil
}

// Open reports whether the keyring has no keys: the API is open.
func (kr *Keyring) Open() bool { return len(kr.keys) == 0 }

// Len is how many keys the keyring holds.
func (kr *Keyring) Len() int { return len(kr.keys) }

// Bearer finds the key of an Authorization header ("Bearer <key>"). Every
// key is compared, in constant time, whatever matches first.
func (kr *Keyring) Bearer(header string) (Key, error) {
	scheme, given, ok := strings.Cut(header, " ")
	if header == "" {
		return Key{}, ErrNoKey
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Key{}, ErrBadKey
	}
	found := -1
	for i, k := range kr.keys {
		if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(given)), k.secret) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Key{}, ErrBadKey
	}
	return kr.keys[found], nil
}
