package lua

import (
	"crypto/rand"
	"encoding/binary"
)

// tokenRoom is how far above a call's first fencing token its tokens may
// go. A call leases at most its count of jobs, and lifecycle.lua's lease
// skips at most nine tokens for a job (the one its row holds, the eight
// its outcomes remember), so it gives tokens below first + 10 * count.
// The service claims at most 100 jobs a call (internal/http,
// internal/push), its tests and benchmarks up to 1000; 1<<16 leaves room
// for counts up to 6553, and takes less than 2^-36 of a bit from the 53
// drawn.
const tokenRoom = 1 << 16

// firstToken draws the first fencing token of a call that may lease jobs
// (docs/design.md#fencing): uniform in [1, 2^53 - tokenRoom], from
// crypto/rand. The call's jobs get it and the next numbers up, which stay
// exact JSON integers (and Lua numbers) below 2^53. Other calls' tokens, a
// job's times and the queue's history tell nothing of it.
func firstToken() int64 {
	const n = 1<<53 - tokenRoom // how many first tokens there are
	var b [8]byte
	for {
		rand.Read(b[:]) // never fails (crypto/rand)
		if v := binary.LittleEndian.Uint64(b[:]) >> 11; v < n {
			return int64(v) + 1
		}
	}
}
