package model

import "strings"

// HostMapper finds the nova-compute service host of a Kubernetes node.
type HostMapper struct{ cfg MappingConfig }

// NewHostMapper builds a mapper from the [mapping] table (already validated).
func NewHostMapper(cfg MappingConfig) HostMapper { return HostMapper{cfg} }

// Host returns the compute host for the node, or "" when the configured label or annotation
// is missing (the node then has no compute service: a mismatch, not an error).
func (m HostMapper) Host(n KubeNode) string {
	if h, ok := m.cfg.Hosts[n.Name]; ok {
		return h
	}
	switch m.cfg.Mode {
	case MapByLabel:
		return n.Labels[m.cfg.Label]
	case MapByAnnotation:
		return n.Annotations[m.cfg.Annotation]
	case MapByStripDomain:
		if m.cfg.Domain != "" {
			return strings.TrimSuffix(n.Name, "."+strings.TrimPrefix(m.cfg.Domain, "."))
		}
		if i := strings.IndexByte(n.Name, '.'); i > 0 {
			return n.Name[:i]
		}
		return n.Name
	default:
		return n.Name
	}
}

// Explicit reports whether the node itself names its compute host: an entry in [mapping]
// hosts, or the mapping's label or annotation present on it.
func (m HostMapper) Explicit(n KubeNode) bool {
	if _, ok := m.cfg.Hosts[n.Name]; ok {
		return true
	}
	switch m.cfg.Mode {
	case MapByLabel:
		_, ok := n.Labels[m.cfg.Label]
		return ok
	case MapByAnnotation:
		_, ok := n.Annotations[m.cfg.Annotation]
		return ok
	}
	return false
}
