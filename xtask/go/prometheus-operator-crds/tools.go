//go:build tools

// Package tools records what this module runs, so that `go mod tidy` keeps
// their dependencies: controller-gen and the API types it reads.
package tools

import (
	_ "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
