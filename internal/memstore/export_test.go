package memstore

// Lock makes the store wait, as a long script does, until Unlock.
func (s *Store) Lock() { s.mr.Lock() }

// Unlock lets the store go on.
func (s *Store) Unlock() { s.mr.Unlock() }
