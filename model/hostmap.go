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
