// Package auth decides who may call the API: API keys with roles, given as a
// bearer token or, for webhook senders that cannot set one, as an
// HMAC-SHA256 signature of the request body.
//
// Keys are compared in constant time, and neither a key nor a signature is
// ever logged: a key is known in logs and events by its Name, which the
// operator gives it (or its role and place in the list), never anything
// computed from the secret.
package auth

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"regexp"
	"strconv"
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
	// Name identifies the key in logs and events without revealing it: the
	// name EMQ_API_KEYS gives it, or its role and its place in the list
	// ("worker-2"). Names are unique within a keyring.
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

// ParseKeys reads EMQ_API_KEYS: comma-separated entries "role:key" or
// "name:role:key", roles reader, worker and admin. A name is 1 to 64
// characters of A-Z a-z 0-9 . _ - and not a role's word; an entry without
// one is named by its role and its place in the list ("admin-3"). Names
// must be unique. An empty spec gives an empty keyring (the API is open).
// No error quotes a secret.
func ParseKeys(spec string) (*Keyring, error) {
	kr := &Keyring{}
	named := map[string]bool{}
	for i, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		key, err := parseKey(entry, i+1)
		switch {
		case err != nil:
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		case named[key.Name]:
			return nil, fmt.Errorf("key %d: the name %q is taken by another key", i+1, key.Name)
		}
		named[key.Name] = true
		kr.keys = append(kr.keys, key)
	}
	return kr, nil
}

// keyName is what a key's name may be: what a log line or a metric label
// can show as it is.
var keyName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// parseKey reads one entry of EMQ_API_KEYS, the place-th of the list.
func parseKey(entry string, place int) (Key, error) {
	first, rest, _ := strings.Cut(entry, ":")
	if role, ok := roleNames[first]; ok {
		if word, _, named := strings.Cut(rest, ":"); named && roleNames[word] != Open {
			// "admin:worker:..." is a name that is a role's word, not an
			// admin key that starts "worker:": refuse what reads two ways.
			return Key{}, errors.New("a key's name may not be a role's word")
		}
		return newKey(first+"-"+strconv.Itoa(place), role, rest)
	}
	roleWord, secret, ok := strings.Cut(rest, ":")
	role, known := roleNames[roleWord]
	switch {
	case !ok || !known:
		return Key{}, errors.New("want role:key or name:role:key with role reader, worker or admin")
	case !keyName.MatchString(first):
		return Key{}, errors.New("a key's name must be 1 to 64 characters of A-Z a-z 0-9 . _ -")
	}
	return newKey(first, role, secret)
}

func newKey(name string, role Role, secret string) (Key, error) {
	if len(secret) < MinKeyLength {
		return Key{}, fmt.Errorf("a key must be at least %d characters", MinKeyLength)
	}
	return Key{Name: name, Role: role, secret: []byte(secret)}, nil
}

// Open reports whether the keyring has no keys: the API is open.
func (kr *Keyring) Open() bool { return len(kr.keys) == 0 }

// Names are the keys' names, in the order EMQ_API_KEYS gives them: what
// the start-up log shows of them.
func (kr *Keyring) Names() []string {
	names := make([]string, len(kr.keys))
	for i, k := range kr.keys {
		names[i] = k.Name + " (" + k.Role.String() + ")"
	}
	return names
}

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
