package kube

import (
	"strings"
	"sync"
)

// A cached pod's name and UID are the only strings of its decoded object it keeps, and the
// decoder made each one among a score of others that die with the object: kept where they
// were made, they pinned half-empty spans of the heap (~20 MiB at 150,000 pods) that the
// first read never gave back. Packed, they sit side by side in chunks of their own.
//
// A chunk lives while one of its strings does: under churn, at most a chunk a live pod.
// In practice pods read together go together, and a chunk holds ~1,000 of them.
const packChunk = 64 << 10 // above the runtime's small sizes: a chunk is a span of its own

// packer copies strings into shared chunks. A chunk's written bytes are never written again
// (a strings.Builder only appends), so every string taken from it stays as it was.
type packer struct {
	mu sync.Mutex
	b  strings.Builder
}

var podStrings packer

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
