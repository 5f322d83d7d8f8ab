package lua

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// source is a text Redis runs, made of files: it knows which file and line
// each of its lines came from, so that a Redis error can say so.
type source struct {
	name  string // the library's name (the EVAL form has none)
	text  string
	hash  string // SHA1 of text
	lines []segment
}

// segment says that the lines from first on came from file, starting at
// its line 1 (file "" for lines the builder wrote).
type segment struct {
	first int
	file  string
}

// builder composes a source.
type builder struct {
	text  strings.Builder
	next  int // the next line's number
	lines []segment
}

func (b *builder) add(text, file string) {
	if b.next == 0 {
		b.next = 1
	}
	b.lines = append(b.lines, segment{first: b.next, file: file})
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	b.text.WriteString(text)
	b.next += strings.Count(text, "\n")
}

// line adds one line the builder writes (no file of ours).
func (b *builder) line(text string) { b.add(text, "") }

// shared adds the files every script runs after.
func (b *builder) shared() {
	for _, name := range shared {
		text, err := files.ReadFile(name)
		if err != nil {
			panic(err) // embedded
		}
		b.add(string(text), name)
	}
}

// wrapped adds a script's body as the function main.
func (b *builder) wrapped(s *Script) {
	b.line("local function main()")
	b.add(s.body, s.file)
	b.line("end")
}

func (b *builder) source() source {
	text := b.text.String()
	sum := sha1.Sum([]byte(text))
	return source{text: text, hash: hex.EncodeToString(sum[:]), lines: b.lines}
}

func shift(lines []segment, by int) []segment {
	out := make([]segment, len(lines))
	for i, l := range lines {
		out[i] = segment{first: l.first + by, file: l.file}
	}
	return out
}

// where names the file and line that line n of the source came from.
func (s source) where(n int) string {
	for i := len(s.lines) - 1; i >= 0; i-- {
		if seg := s.lines[i]; n >= seg.first {
			if seg.file == "" {
				return fmt.Sprintf("line %d of the composed script", n)
			}
			return fmt.Sprintf("%s:%d", seg.file, n-seg.first+1)
		}
	}
	return fmt.Sprintf("line %d", n)
}

// redisLine finds where Redis says a script or function failed.
var redisLine = regexp.MustCompile(`script: \S+, on @user_(script|function):(\d+)\.?`)

// locate rewrites the place a Redis error names into the file and line of
// ours that it came from.
func (s source) locate(msg string) string {
	return redisLine.ReplaceAllStringFunc(msg, func(m string) string {
		n, _ := strconv.Atoi(redisLine.FindStringSubmatch(m)[2])
		return "at " + s.where(n)
	})
}
