package kube

import (
	"strings"
	"sync"
)

// The first read's pods keep two strings each of their decoded objects, name and UID, and the
// decoder made each among a score of others that die with the object: kept where they were
// made, they pinned half-empty spans of the heap (~20 MiB at 150,000 pods) that the process
// never gave back. Packed, they sit side by side in chunks of their own. A chunk lives while
// one of its strings does, so only the first read packs (podStore.cachedPod).
const packChunk = 64 << 10 // above the runtime's small sizes: a chunk is a span of its own

// packer copies strings into shared chunks. A chunk's written bytes are never written again
// (a strings.Builder only appends), so every string taken from it stays as it was.
type packer struct {
	mu sync.Mutex
	b  strings.Builder
}

// pack is a copy of s in the current chunk (s itself when it would not fit in one).
func (p *packer) pack(s string) string {
	if len(s) == 0 || len(s) > packChunk/8 {
		return s
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.b.Cap()-p.b.Len() < len(s) {
		p.b = strings.Builder{}
		p.b.Grow(packChunk)
	}
	start := p.b.Len()
	p.b.WriteString(s)
	return p.b.String()[start:]
}
