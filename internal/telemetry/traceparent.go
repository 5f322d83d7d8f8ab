package telemetry

// TraceparentLen is the length of a version 00 traceparent, and of the
// part of a later version's that version 00 defines: "00-" + 32 hex
// trace-id + "-" + 16 hex parent-id + "-" + 2 hex flags.
const TraceparentLen = 55

// ValidTraceparent reports whether s is a traceparent header that W3C Trace
// Context level 1 says to accept: a version of two lowercase hex digits other
// than "ff"; for version "00" exactly "00-<32 hex>-<16 hex>-<2 hex>"; for a
// later version the same start, then "-" if there is more; a trace-id and a
// parent-id that are not all zeros. The service keeps a producer's
// traceparent with its job only when it passes, and ignores it otherwise,
// as the specification asks of an invalid header.
func ValidTraceparent(s string) bool {
	if len(s) < TraceparentLen {
		return false
	}
	version := s[0:2]
	if !isLowerHex(version) || version == "ff" {
		return false
	}
	if version == "00" && len(s) != TraceparentLen {
		return false
	}
	if len(s) > TraceparentLen && s[TraceparentLen] != '-' {
		return false
	}
	if s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return false
	}
	traceID, parentID, flags := s[3:35], s[36:52], s[53:55]
	return isLowerHex(traceID) && !allZeros(traceID) &&
		isLowerHex(parentID) && !allZeros(parentID) &&
		isLowerHex(flags)
}

// isLowerHex reports whether s is lowercase hex digits only.
func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// allZeros reports whether s is "0" digits only.
func allZeros(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' {
			return false
		}
	}
	return true
}
