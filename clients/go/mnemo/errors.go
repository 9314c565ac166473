package mnemo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"mnemo.dev/clients/go/mnemov1"
)

// ErrorDomain is the ErrorInfo domain of every Mnemo error.
const ErrorDomain = "mnemo.v1"

// FieldViolation is one offending request field, from google.rpc.BadRequest.
type FieldViolation struct {
	Field       string
	Description string
}

// Error is what every failed call of a Client returns (also from a stream's
// Recv): the status code and what the server put in the google.rpc.Status
// details. Get it with errors.As:
//
//	var merr *mnemo.Error
//	if errors.As(err, &merr) && merr.Code == codes.Aborted && merr.Reason == "ETAG_MISMATCH" { ... }
//
// It implements GRPCStatus, so status.Code(err) and status.FromError(err)
// work on it as on any gRPC error.
type Error struct {
	// Code is the gRPC status code.
	Code codes.Code
	// Message is the status message as the server sent it.
	Message string
	// Reason is the ErrorInfo reason, e.g. "ETAG_MISMATCH" ("" when the
	// status has none, e.g. a deadline that expired on the client).
	Reason string
	// Domain is the ErrorInfo domain (ErrorDomain for the server's errors).
	Domain string
	// Metadata is the ErrorInfo metadata (e.g. "latest_cursor"); never nil.
	Metadata map[string]string
	// FieldViolations are the BadRequest violations, in order.
	FieldViolations []FieldViolation
	// RetryAfter is the RetryInfo delay (0 when there is none).
	RetryAfter time.Duration

	status *status.Status
}

// Error reads "ABORTED [ETAG_MISMATCH]: message", then one line per field violation.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(CodeName(e.Code))
	if e.Reason != "" {
		fmt.Fprintf(&b, " [%s]", e.Reason)
	}
	b.WriteString(": ")
	b.WriteString(e.Message)
	for _, v := range e.FieldViolations {
		fmt.Fprintf(&b, "\n  %s: %s", v.Field, v.Description)
	}
	return b.String()
}

// GRPCStatus is the status the error was made from (with its details).
func (e *Error) GRPCStatus() *status.Status {
	if e.status == nil {
		return status.New(e.Code, e.Message)
	}
	return e.status
}

// CodeName is the gRPC spelling of Code, e.g. "INVALID_ARGUMENT".
func (e *Error) CodeName() string { return CodeName(e.Code) }

// HasReason reports whether the error's reason is r (ERROR_REASON_ETAG_MISMATCH
// is the reason "ETAG_MISMATCH").
func (e *Error) HasReason(r mnemov1.ErrorReason) bool {
	return e.Reason != "" && e.Reason == ReasonName(r)
}

// Violates reports whether a BadRequest violation names field.
func (e *Error) Violates(field string) bool {
	for _, v := range e.FieldViolations {
		if v.Field == field {
			return true
		}
	}
	return false
}

// ReasonName is the wire spelling of an ErrorReason: its enum name without
// the ERROR_REASON_ prefix ("ETAG_MISMATCH").
func ReasonName(r mnemov1.ErrorReason) string {
	return strings.TrimPrefix(r.String(), "ERROR_REASON_")
}

var codeNames = [...]string{
	codes.OK:                 "OK",
	codes.Canceled:           "CANCELLED",
	codes.Unknown:            "UNKNOWN",
	codes.InvalidArgument:    "INVALID_ARGUMENT",
	codes.DeadlineExceeded:   "DEADLINE_EXCEEDED",
	codes.NotFound:           "NOT_FOUND",
	codes.AlreadyExists:      "ALREADY_EXISTS",
	codes.PermissionDenied:   "PERMISSION_DENIED",
	codes.ResourceExhausted:  "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION",
	codes.Aborted:            "ABORTED",
	codes.OutOfRange:         "OUT_OF_RANGE",
	codes.Unimplemented:      "UNIMPLEMENTED",
	codes.Internal:           "INTERNAL",
	codes.Unavailable:        "UNAVAILABLE",
	codes.DataLoss:           "DATA_LOSS",
	codes.Unauthenticated:    "UNAUTHENTICATED",
}

// CodeName is the gRPC spelling of a status code: codes.NotFound is "NOT_FOUND".
func CodeName(c codes.Code) string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("CODE_%d", uint32(c))
}

// AsError converts any error a call returned into an *Error: an *Error as is
// (also wrapped), a gRPC status error with its details decoded, a context
// error as CANCELLED or DEADLINE_EXCEEDED, anything else as UNKNOWN. nil
// stays nil.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var merr *Error
	if errors.As(err, &merr) {
		return merr
	}
	st, ok := status.FromError(err)
	if !ok {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			st = status.FromContextError(err)
		}
	}
	return fromStatus(st)
}

func fromStatus(st *status.Status) *Error {
	e := &Error{Code: st.Code(), Message: st.Message(), Metadata: map[string]string{}, status: st}
	for _, detail := range st.Details() {
		switch d := detail.(type) {
		case *errdetails.ErrorInfo:
			if e.Reason == "" {
				e.Reason, e.Domain = d.GetReason(), d.GetDomain()
				for k, v := range d.GetMetadata() {
					e.Metadata[k] = v
				}
			}
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				e.FieldViolations = append(e.FieldViolations, FieldViolation{v.GetField(), v.GetDescription()})
			}
		case *errdetails.RetryInfo:
			if e.RetryAfter == 0 {
				e.RetryAfter = d.GetRetryDelay().AsDuration()
			}
		}
	}
	return e
}

// toError is AsError for the interceptors, which leave nil and io.EOF alone.
func toError(err error) error {
	if err == nil {
		return nil
	}
	return AsError(err)
}
