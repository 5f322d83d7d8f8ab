package keyspace

import (
	"strconv"
	"strings"
	"sync"
)

// The due index (docs/design.md#the-sweep) is a sorted set of queues by
// when each next has work for the reaper: a lease that lapses, a delayed
// job that comes due, an expiry, a throttle window that ends, or the time
// an empty queue is forgotten. Its member is the queue's key base
// (Queue.Base), its score that time in ms on the Redis server's clock.
// The scripts that make such work write it in the same atomic step, so
// the index is in the queue's slot: on one node there is one index,
// DueKey; on a Cluster there is one per slot, SlotDueKey, whose hash tag
// is a short string that hashes to the slot (slotTags).

// DueKey is the due index of every queue under prefix on one node.
func DueKey(prefix string) string { return prefix + ":due" }

// SlotDueKey is the due index of the queues in the Cluster slot of queue.
func SlotDueKey(prefix, queue string) string {
	return prefix + ":{" + slotTags()[Slot(queue)] + "}:due"
}

// SlotDueKeys are the due indexes of every slot of a Cluster, in slot
// order.
func SlotDueKeys(prefix string) []string {
	tags := slotTags()
	keys := make([]string, len(tags))
	for slot, tag := range tags {
		keys[slot] = prefix + ":{" + tag + "}:due"
	}
	return keys
}

// QueueOfBase is the name of the queue whose key base is base, the due
// index's member; false when base is not one under prefix.
func QueueOfBase(prefix, base string) (string, bool) {
	name, ok := strings.CutPrefix(base, prefix+":{")
	if !ok {
		return "", false
	}
	name, ok = strings.CutSuffix(name, "}:")
	return name, ok && ValidQueueName(name)
}

// Slots is how many hash slots a Redis Cluster has.
const Slots = 16384

// Slot is the Cluster hash slot of queue's keys: CRC16 (XMODEM) of the
// queue's name, their hash tag, modulo Slots.
func Slot(queue string) int { return int(crc16(queue)) % Slots }

// crc16 is the CRC16-CCITT (XMODEM) that Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// slotTags are, by slot, the shortest base-36 numerals (then the first)
// that hash to each slot: found once, in a few milliseconds.
var slotTags = sync.OnceValue(func() []string {
	tags := make([]string, Slots)
	left := Slots
	for n := 0; left > 0; n++ {
		tag := strconv.FormatInt(int64(n), 36)
		if slot := Slot(tag); tags[slot] == "" {
			tags[slot] = tag
			left--
		}
	}
	return tags
})
