// Stands in for sigs.k8s.io/mcs-api/controllers v0.5.2, whose module zip the Go proxy refuses
// (403). Cilium's operator uses one constant of it outside tests; see ../README.md.
module sigs.k8s.io/mcs-api/controllers

go 1.26.0
