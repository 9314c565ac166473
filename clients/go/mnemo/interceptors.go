package mnemo

import (
	"context"
	cryptorand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// requestIDField is the field of every write request that can be replayed.
const requestIDField protoreflect.Name = "request_id"

type noTimeoutKey struct{}

// WithoutTimeout marks ctx so that the client's default deadline is not
// applied to calls made with it (a deadline ctx has of its own still is).
func WithoutTimeout(ctx context.Context) context.Context {
	return context.WithValue(ctx, noTimeoutKey{}, true)
}

// interceptors are the facade's, outermost first: errors become *Error; the
// default deadline is set; a write gets its request id once, before the
// retries; the headers and the token are set on each attempt; then the
// caller's own.
func interceptors(cfg *config) ([]grpc.UnaryClientInterceptor, []grpc.StreamClientInterceptor, error) {
	if cfg.retry.MaxAttempts < 1 {
		return nil, nil, fmt.Errorf("mnemo: RetryPolicy.MaxAttempts must be at least 1, not %d", cfg.retry.MaxAttempts)
	}
	unary := []grpc.UnaryClientInterceptor{errorUnary, deadlineUnary(cfg.timeout)}
	if cfg.autoRequestIDs {
		unary = append(unary, requestIDUnary)
	}
	if cfg.retry.MaxAttempts > 1 {
		unary = append(unary, retryUnary(cfg.retry))
	}
	stream := []grpc.StreamClientInterceptor{errorAndDeadlineStream(cfg.timeout)}
	if cfg.token != nil || len(cfg.headers) > 0 {
		md := outgoing(cfg)
		unary = append(unary, func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			ctx, err := md(ctx)
			if err != nil {
				return err
			}
			return invoker(ctx, method, req, reply, cc, opts...)
		})
		stream = append(stream, func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			ctx, err := md(ctx)
			if err != nil {
				return nil, err
			}
			return streamer(ctx, desc, cc, method, opts...)
		})
	}
	return append(unary, cfg.unary...), append(stream, cfg.stream...), nil
}

func errorUnary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return toError(invoker(ctx, method, req, reply, cc, opts...))
}

func withDefaultTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if _, has := ctx.Deadline(); has || timeout <= 0 || ctx.Value(noTimeoutKey{}) != nil {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, timeout)
}

func deadlineUnary(timeout time.Duration) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		ctx, cancel := withDefaultTimeout(ctx, timeout)
		defer cancel()
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

// requestIDUnary gives a request with an empty request_id a fresh uuid, once
// per call, so that every retry of the call (and nothing else) carries the
// same id. The caller's message is not changed (a copy is sent).
func requestIDUnary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if msg, ok := req.(proto.Message); ok {
		field := msg.ProtoReflect().Descriptor().Fields().ByName(requestIDField)
		if field != nil && field.Kind() == protoreflect.StringKind && field.Cardinality() != protoreflect.Repeated &&
			msg.ProtoReflect().Get(field).String() == "" {
			clone := proto.Clone(msg)
			clone.ProtoReflect().Set(field, protoreflect.ValueOfString(NewRequestID()))
			req = clone
		}
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// NewRequestID is a random (version 4) UUID, as the facade puts in request_id.
func NewRequestID() string {
	var b [16]byte
	_, _ = cryptorand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// retryUnary retries a call failing with UNAVAILABLE, sleeping a random time
// up to a ceiling that grows from InitialBackoff by Multiplier up to
// MaxBackoff (full jitter), as long as the context is live.
func retryUnary(policy RetryPolicy) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		ceiling := policy.InitialBackoff
		for attempt := 1; ; attempt++ {
			err := invoker(ctx, method, req, reply, cc, opts...)
			if err == nil || status.Code(err) != codes.Unavailable || attempt >= policy.MaxAttempts || ctx.Err() != nil {
				return err
			}
			if sleep(ctx, time.Duration(rand.Float64()*float64(ceiling))) != nil {
				return err
			}
			ceiling = min(time.Duration(float64(ceiling)*policy.Multiplier), policy.MaxBackoff)
		}
	}
}

// sleep waits for d or until ctx is done (then it returns ctx.Err()).
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// outgoing adds the headers and the token to a call's metadata; a call whose
// context already carries an authorization header keeps it.
func outgoing(cfg *config) func(context.Context) (context.Context, error) {
	var pairs []string
	for k, v := range cfg.headers {
		pairs = append(pairs, k, v)
	}
	return func(ctx context.Context) (context.Context, error) {
		if len(pairs) > 0 {
			ctx = metadata.AppendToOutgoingContext(ctx, pairs...)
		}
		if cfg.token == nil {
			return ctx, nil
		}
		if md, ok := metadata.FromOutgoingContext(ctx); ok && len(md.Get("authorization")) > 0 {
			return ctx, nil
		}
		token, err := cfg.token(ctx)
		if err != nil {
			return ctx, status.Errorf(codes.Unauthenticated, "mnemo: the token source failed: %v", err)
		}
		if token == "" {
			return ctx, nil
		}
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token), nil
	}
}

// errorAndDeadlineStream gives a stream the default deadline (released when
// the stream ends) and makes its errors *Error.
func errorAndDeadlineStream(timeout time.Duration) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		ctx, cancel := withDefaultTimeout(ctx, timeout)
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			cancel()
			return nil, toError(err)
		}
		return &clientStream{ClientStream: s, cancel: cancel}, nil
	}
}

type clientStream struct {
	grpc.ClientStream
	cancel context.CancelFunc
}

func (s *clientStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		s.cancel() // the stream has ended (io.EOF or its status)
		if errors.Is(err, io.EOF) {
			return err
		}
		return toError(err)
	}
	return nil
}

func (s *clientStream) SendMsg(m any) error {
	err := s.ClientStream.SendMsg(m)
	if err == nil || errors.Is(err, io.EOF) { // io.EOF: the stream ended; RecvMsg says why
		return err
	}
	return toError(err)
}

func (s *clientStream) Header() (metadata.MD, error) {
	md, err := s.ClientStream.Header()
	return md, toError(err)
}
