module sigs.k8s.io/container-object-storage-interface/client

go 1.26.0

require k8s.io/apimachinery v0.36.3
