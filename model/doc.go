// Package model holds drainctl's nouns and the pure maths derived from them: nodes with their
// Kubernetes and Nova halves, VMs, pods, configuration and the inventory join. It imports only
// the standard library; it knows nothing of Kubernetes or OpenStack client types, so the UI and
// the policy can use it without pulling in either API.
package model
