// Package sim is a simulated cluster: Keystone and Nova served over real HTTP (so drainctl's
// ordinary gophercloud client talks to it), with live migrations that run as a process on a
// scaled clock, fault injection, and a generated Kubernetes side for the demo.
//
// It is a product feature (the demo, the benchmarks) and a test server; it is not a fake of
// drainctl's own interfaces. Its answers follow shared/notes/nova-api.md and the real
// responses in shared/notes/nova-samples/ (copied into testdata/nova-samples, which the tests
// read): same paths, shapes, status codes and sequences, cold migration included.
package sim
