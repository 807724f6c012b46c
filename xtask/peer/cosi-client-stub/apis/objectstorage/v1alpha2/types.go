// Package v1alpha2 stands in for the COSI client module when a Go module proxy does not serve
// it: the Bucket fields the Go operator's GarageBucket controller reads, and nothing else.
// A peer build with it runs without its COSI controllers (docs/development.md).
package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// BucketDeletionPolicy says what happens to a bucket when its claim goes.
type BucketDeletionPolicy string

// BucketDeletionPolicyRetain keeps the bucket.
const BucketDeletionPolicyRetain BucketDeletionPolicy = "Retain"

// BucketSpec is the part of a COSI Bucket's spec that is read.
type BucketSpec struct {
	DriverName     string               `json:"driverName"`
	DeletionPolicy BucketDeletionPolicy `json:"deletionPolicy"`
}

// BucketStatus is the part of a COSI Bucket's status that is read.
type BucketStatus struct {
	BucketID string `json:"bucketID,omitempty"`
}

// Bucket is a COSI Bucket.
type Bucket struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              BucketSpec   `json:"spec"`
	Status            BucketStatus `json:"status,omitempty"`
}

// DeepCopyObject makes Bucket a runtime.Object.
func (b *Bucket) DeepCopyObject() runtime.Object {
	c := *b
	b.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// BucketList is a list of Buckets.
type BucketList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Bucket `json:"items"`
}

// DeepCopyObject makes BucketList a runtime.Object.
func (l *BucketList) DeepCopyObject() runtime.Object {
	c := *l
	c.Items = append([]Bucket(nil), l.Items...)
	return &c
}

// SchemeGroupVersion is the COSI API group and version.
var SchemeGroupVersion = schema.GroupVersion{Group: "objectstorage.k8s.io", Version: "v1alpha2"}

// AddToScheme registers the types.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &Bucket{}, &BucketList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
