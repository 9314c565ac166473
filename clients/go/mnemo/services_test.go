package mnemo_test

import (
	"context"
	"errors"
	"io"
	"maps"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"mnemo.dev/clients/go/mnemo"
	"mnemo.dev/clients/go/mnemov1"
)

func TestWorkingMemoryRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	client := newClient(t, shared(t))
	name := "users/" + userID(t) + "/memoryState"

	empty, err := client.WorkingMemory.GetMemoryState(ctx, &mnemov1.GetMemoryStateRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if empty.GetMemoryState().GetEtag() != "" || empty.GetMemoryState().GetSummary() != "" {
		t.Fatalf("a state never written: %v", empty)
	}
	saved, err := client.WorkingMemory.SaveMemoryState(ctx, &mnemov1.SaveMemoryStateRequest{
		MemoryState: &mnemov1.MemoryState{Name: name, Summary: "likes tea",
			Recent: []*mnemov1.Exchange{{Ask: "hi", Answer: "hello"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if saved.GetMemoryState().GetEtag() == "" || saved.GetChangeCursor() == 0 {
		t.Fatalf("saved: %v", saved)
	}
	got, err := client.WorkingMemory.GetMemoryState(ctx, &mnemov1.GetMemoryStateRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	state := got.GetMemoryState()
	if state.GetSummary() != "likes tea" || len(state.GetRecent()) != 1 || state.GetRecent()[0].GetAnswer() != "hello" ||
		state.GetEtag() != saved.GetMemoryState().GetEtag() {
		t.Fatalf("read back %v, saved %v", state, saved.GetMemoryState())
	}

	// A save conditional on an etag that is no longer current.
	_, err = client.WorkingMemory.SaveMemoryState(ctx, &mnemov1.SaveMemoryStateRequest{
		MemoryState: &mnemov1.MemoryState{Name: name, Summary: "likes coffee", Etag: `"stale"`},
	})
	merr := mnemoError(t, err)
	if merr.Code != codes.Aborted || merr.Reason != "ETAG_MISMATCH" || !merr.HasReason(mnemov1.ErrorReason_ERROR_REASON_ETAG_MISMATCH) ||
		merr.Domain != mnemo.ErrorDomain || status.Code(err) != codes.Aborted {
		t.Fatalf("stale etag: %#v", merr)
	}
}

func TestHistoryRoundTripSetsRequestIDOnce(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	var mu sync.Mutex
	var sent []string // request_id of each AppendMessages attempt, as sent
	record := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if r, ok := req.(*mnemov1.AppendMessagesRequest); ok {
			mu.Lock()
			sent = append(sent, r.GetRequestId())
			mu.Unlock()
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	client := newClient(t, shared(t), mnemo.WithUnaryInterceptors(record))
	user := userID(t)
	created, err := client.Conversations.CreateConversation(ctx, &mnemov1.CreateConversationRequest{
		Parent: "users/" + user, ConversationId: "c1",
	})
	if err != nil {
		t.Fatal(err)
	}
	conversation := created.GetConversation().GetName()
	if conversation != "users/"+user+"/conversations/c1" {
		t.Fatalf("created %q", conversation)
	}
	request := &mnemov1.AppendMessagesRequest{Conversation: conversation, Messages: []*mnemov1.HistoryMessage{
		{MessageJson: `{"role":"user","content":"where is my umbrella?"}`},
		{MessageJson: `{"role":"assistant","content":"by the door"}`},
	}}
	appended, err := client.Conversations.AppendMessages(ctx, request)
	if err != nil {
		t.Fatal(err)
	}
	if len(appended.GetMessages()) != 2 || appended.GetMessages()[1].GetPosition() != 1 {
		t.Fatalf("appended: %v", appended)
	}
	if request.GetRequestId() != "" || len(sent) != 1 || len(sent[0]) != 36 {
		t.Fatalf("request_id: the caller's %q, sent %q (want one fresh uuid, the caller's message untouched)", request.GetRequestId(), sent)
	}
	listed, err := client.Conversations.ListMessages(ctx, &mnemov1.ListMessagesRequest{Parent: conversation})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed.GetMessages()) != 2 || listed.GetMessages()[0].GetRole() != "user" ||
		listed.GetMessages()[1].GetText() != "by the door" {
		t.Fatalf("listed: %v", listed)
	}

	// Appending at a position that is taken.
	expected := int64(0)
	_, err = client.Conversations.AppendMessages(ctx, &mnemov1.AppendMessagesRequest{Conversation: conversation,
		ExpectedPosition: &expected, Messages: []*mnemov1.HistoryMessage{{MessageJson: `{"role":"user","content":"x"}`}}})
	if merr := mnemoError(t, err); merr.Code != codes.Aborted || merr.Reason != "POSITION_MISMATCH" {
		t.Fatalf("expected_position 0 of a conversation of 2: %v", merr)
	}
}

func TestMemoriesAndRecallStream(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	client := newClient(t, shared(t))
	parent := "users/" + userID(t)
	texts := []string{"The user's umbrella is blue", "The user drinks green tea", "The user's cat is called Miso"}
	var names []string
	for _, text := range texts {
		created, err := client.Memories.CreateMemory(ctx, &mnemov1.CreateMemoryRequest{Parent: parent, Memory: &mnemov1.Memory{Text: text}})
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, created.GetMemory().GetName())
	}
	stream, err := client.Memories.RecallMemories(ctx, &mnemov1.RecallMemoriesRequest{Parent: parent, Query: "umbrella"})
	if err != nil {
		t.Fatal(err)
	}
	var recalled []*mnemov1.RecallMemoriesResponse
	for {
		response, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		recalled = append(recalled, response)
	}
	if len(recalled) == 0 || recalled[0].GetMemory().GetName() != names[0] || recalled[0].GetRank() != 1 {
		t.Fatalf("recall of umbrella: %v", recalled)
	}
	// The minimum relevance of one request (an optional double: a pointer).
	// This server recalls by words: it keeps every match unless asked.
	injected, err := client.Memories.BuildContext(ctx, &mnemov1.BuildContextRequest{Parent: parent, Query: "umbrella"})
	if err != nil || len(injected.GetMemories()) != 1 || injected.GetSystemMessage() == "" {
		t.Fatalf("context for umbrella: %v %v", injected, err)
	}
	injected, err = client.Memories.BuildContext(ctx, &mnemov1.BuildContextRequest{Parent: parent, Query: "umbrella", MinScore: proto.Float64(0.99)})
	if err != nil || len(injected.GetMemories()) != 0 || injected.GetSystemMessage() != "" || injected.GetUsedBytes() != 0 {
		t.Fatalf("context for umbrella at relevance 0.99: %v %v", injected, err)
	}

	// An update conditional on a stale etag, and a bad name with its field violation.
	_, err = client.Memories.UpdateMemory(ctx, &mnemov1.UpdateMemoryRequest{
		Memory:     &mnemov1.Memory{Name: names[1], Text: "The user drinks black tea", Etag: `"stale"`},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"text"}},
	})
	if merr := mnemoError(t, err); merr.Code != codes.Aborted || merr.Reason != "ETAG_MISMATCH" {
		t.Fatalf("stale etag: %v", merr)
	}
	_, err = client.Memories.CreateMemory(ctx, &mnemov1.CreateMemoryRequest{Parent: "people/x", Memory: &mnemov1.Memory{Text: "x"}})
	merr := mnemoError(t, err)
	if merr.Code != codes.InvalidArgument || merr.Reason != "INVALID_NAME" || !merr.Violates("parent") {
		t.Fatalf("parent people/x: %#v", merr)
	}
	var asStatus interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &asStatus) || asStatus.GRPCStatus().Code() != codes.InvalidArgument || len(asStatus.GRPCStatus().Details()) == 0 {
		t.Fatalf("the status under %v", err)
	}
	// An error in a server stream comes from Recv, as an *mnemo.Error too.
	stream, err = client.Memories.RecallMemories(ctx, &mnemov1.RecallMemoriesRequest{Parent: parent, Query: "tea", MaxResults: -1})
	if err == nil {
		_, err = stream.Recv()
	}
	if merr := mnemoError(t, err); merr.Code != codes.InvalidArgument || !merr.Violates("max_results") {
		t.Fatalf("max_results -1: %#v", merr)
	}
}

func TestErasureLeavesTheTenantAnAuditRecord(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	client := newClient(t, shared(t))
	parent := "users/" + userID(t)
	if _, err := client.Memories.CreateMemory(ctx, &mnemov1.CreateMemoryRequest{Parent: parent,
		Memory: &mnemov1.Memory{Text: "The user's umbrella is blue"}}); err != nil {
		t.Fatal(err)
	}
	receipt, err := client.Governance.DeleteUserData(ctx, &mnemov1.DeleteUserDataRequest{Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	if receipt.GetDeletedRows()["memories"] != 1 {
		t.Fatalf("receipt: %v", receipt)
	}

	// Users without a tenant: "tenants/-"; every page, newest first.
	var found []*mnemov1.UserErasure
	for token := ""; ; {
		page, err := client.Governance.ListUserErasures(ctx, &mnemov1.ListUserErasuresRequest{Parent: "tenants/-", PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, erasure := range page.GetErasures() {
			if erasure.GetUser() == parent {
				found = append(found, erasure)
			}
		}
		if token = page.GetNextPageToken(); token == "" {
			break
		}
	}
	if len(found) != 1 {
		t.Fatalf("records of %s: %v", parent, found)
	}
	record := found[0]
	if !maps.Equal(record.GetDeletedRows(), receipt.GetDeletedRows()) || record.GetErasedBy() != "" || record.GetByAdmin() ||
		record.GetEraseTime() == nil {
		t.Fatalf("record %v, receipt %v", record, receipt)
	}
}
