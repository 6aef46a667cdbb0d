// Package controllers holds the one identifier of sigs.k8s.io/mcs-api/controllers v0.5.2 that
// Cilium v1.20.2's operator uses outside its tests (its value as the KEP-1645 annotation spells it).
package controllers

// DerivedServiceAnnotation names the Service derived from a ServiceImport.
const DerivedServiceAnnotation = "multicluster.kubernetes.io/derived-service"
