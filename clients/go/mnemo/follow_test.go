package mnemo_test

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	"mnemo.dev/clients/go/mnemo"
	"mnemo.dev/clients/go/mnemov1"
)

// remember creates a memory for user and returns the change cursor of the write.
func remember(t *testing.T, ctx context.Context, client *mnemo.Client, user, text string) int64 {
	t.Helper()
	created, err := client.Memories.CreateMemory(ctx, &mnemov1.CreateMemoryRequest{Parent: "users/" + user, Memory: &mnemov1.Memory{Text: text}})
	if err != nil {
		t.Fatal(err)
	}
	return created.GetChangeCursor()
}

// allCursors lists the cursors of every change of user.
func allCursors(t *testing.T, ctx context.Context, client *mnemo.Client, user string) []int64 {
	t.Helper()
	var cursors []int64
	after := int64(0)
	for {
		page, err := client.Sync.ListChanges(ctx, &mnemov1.ListChangesRequest{Parent: "users/" + user, AfterCursor: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, change := range page.GetChanges() {
			cursors = append(cursors, change.GetCursor())
		}
		if len(page.GetChanges()) == 0 {
			return cursors
		}
		after = page.GetNextCursor()
	}
}

func TestFollowerResyncsFromACursorAhead(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	client := newClient(t, shared(t))
	user := userID(t)
	latest := remember(t, ctx, client, user, "one")

	// Without OnResync the error ends the iteration.
	var yielded []error
	for _, err := range client.Follow(user, mnemo.AfterCursor(latest+100)).Events(ctx) {
		yielded = append(yielded, err)
	}
	if len(yielded) != 1 {
		t.Fatalf("yielded %v; want one error", yielded)
	}
	if merr := mnemoError(t, yielded[0]); merr.Code != codes.OutOfRange || merr.Reason != "CURSOR_AHEAD" {
		t.Fatalf("a cursor ahead: %v", merr)
	}

	// With OnResync: reload, then go on after the user's latest cursor.
	var causes []string
	follower := client.Follow(user, mnemo.AfterCursor(latest+100), mnemo.OnResync(func(ctx context.Context, cause *mnemo.Error) error {
		causes = append(causes, cause.Reason)
		return nil
	}))
	var newer int64
	for event, err := range follower.Events(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if event.Heartbeat != nil && newer == 0 {
			if event.Heartbeat.GetCursor() != latest || follower.Cursor() != latest {
				t.Fatalf("after the resync: heartbeat %v, cursor %d; want %d", event.Heartbeat, follower.Cursor(), latest)
			}
			newer = remember(t, ctx, client, user, "two")
		}
		if event.Change != nil {
			if event.Change.GetCursor() != newer {
				t.Fatalf("after the resync: change %d; want the new write's %d", event.Change.GetCursor(), newer)
			}
			break
		}
	}
	if !slices.Equal(causes, []string{"CURSOR_AHEAD"}) || follower.Cursor() != newer {
		t.Fatalf("resync causes %v, cursor %d (want %d)", causes, follower.Cursor(), newer)
	}
}

func TestNextStep(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  *mnemo.Error
		want mnemo.FollowStep
	}{
		{&mnemo.Error{Code: codes.Aborted, Reason: "WATCH_LAGGING"}, mnemo.Resume},
		{&mnemo.Error{Code: codes.Aborted, Reason: "CONCURRENT_MODIFICATION"}, mnemo.Backoff},
		{&mnemo.Error{Code: codes.Aborted, Reason: "ETAG_MISMATCH"}, mnemo.Fatal},
		{&mnemo.Error{Code: codes.Unavailable}, mnemo.Backoff},
		{&mnemo.Error{Code: codes.ResourceExhausted, Reason: "RATE_LIMITED"}, mnemo.Backoff},
		{&mnemo.Error{Code: codes.OutOfRange, Reason: "CURSOR_EXPIRED"}, mnemo.Resync},
		{&mnemo.Error{Code: codes.OutOfRange, Reason: "CURSOR_AHEAD"}, mnemo.Resync},
		{&mnemo.Error{Code: codes.OutOfRange}, mnemo.Fatal},
		{&mnemo.Error{Code: codes.Unauthenticated}, mnemo.Fatal},
		{&mnemo.Error{Code: codes.InvalidArgument, Reason: "INVALID_NAME"}, mnemo.Fatal},
	} {
		if got := mnemo.NextStep(tc.err); got != tc.want {
			t.Errorf("NextStep(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestFollowRefusesAUserThatIsAPath(t *testing.T) {
	t.Parallel()
	client := newClient(t, "127.0.0.1:1") // never reached: the follower refuses first
	var yielded []error
	for _, err := range client.Follow("u1/conversations/c1").Events(testContext(t)) {
		yielded = append(yielded, err)
	}
	if len(yielded) != 1 {
		t.Fatalf("yielded %v; want one error", yielded)
	}
	if merr := mnemoError(t, yielded[0]); merr.Code != codes.InvalidArgument || merr.Reason != "INVALID_NAME" || !merr.Violates("user") {
		t.Fatalf("user u1/conversations/c1: %v", merr)
	}
}
