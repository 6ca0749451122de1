package heedgrpc

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// descriptorIdempotent reports whether the descriptor of method (a full
// method name, "/package.Service/Method") in files (nil: the global
// registry) declares idempotency_level NO_SIDE_EFFECTS or IDEMPOTENT. A
// method whose descriptor is not found is not idempotent.
func descriptorIdempotent(files *protoregistry.Files, method string) bool {
	if files == nil {
		files = protoregistry.GlobalFiles
	}
	svc, name, ok := splitMethod(method)
	if !ok {
		return false
	}
	d, err := files.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return false
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return false
	}
	md := sd.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		return false
	}
	opts, ok := md.Options().(*descriptorpb.MethodOptions)
	if !ok || opts == nil {
		return false
	}
	switch opts.GetIdempotencyLevel() {
	case descriptorpb.MethodOptions_NO_SIDE_EFFECTS, descriptorpb.MethodOptions_IDEMPOTENT:
		return true
	}
	return false
}

// splitMethod splits "/package.Service/Method" into the service's full
// name and the method's name.
func splitMethod(m string) (svc, name string, ok bool) {
	if !strings.HasPrefix(m, "/") {
		return "", "", false
	}
	svc, name, ok = strings.Cut(m[1:], "/")
	if !ok || svc == "" || name == "" || strings.Contains(name, "/") {
		return "", "", false
	}
	return svc, name, true
}
