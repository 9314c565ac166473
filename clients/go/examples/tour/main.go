// Command tour is the Go client's tour (docs/clients/go.md): working memory,
// an etag conflict, history, memories and recall, then the change feed.
//
//	go run ./examples/tour [HOST:PORT]      (default 127.0.0.1:50051)
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"mnemo.dev/clients/go/mnemo"
	"mnemo.dev/clients/go/mnemov1"
)

func main() {
	target := "127.0.0.1:50051"
	if len(os.Args) > 1 {
		target = os.Args[1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tour(ctx, target, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func tour(ctx context.Context, target string, out io.Writer) error {
	// mnemo.WithToken(jwt) for a server run with --auth jwt.
	client, err := mnemo.New(target)
	if err != nil {
		return err
	}
	defer client.Close()

	// Working memory: save, then a save conditional on a stale etag.
	state := &mnemov1.MemoryState{Name: "users/ada/memoryState", Summary: "Ada is planning a trip to Lisbon"}
	saved, err := client.WorkingMemory.SaveMemoryState(ctx, &mnemov1.SaveMemoryStateRequest{MemoryState: state})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "saved:", saved.GetMemoryState().GetSummary())
	state.Etag = `"stale"`
	_, err = client.WorkingMemory.SaveMemoryState(ctx, &mnemov1.SaveMemoryStateRequest{MemoryState: state})
	var merr *mnemo.Error
	if errors.As(err, &merr) && merr.HasReason(mnemov1.ErrorReason_ERROR_REASON_ETAG_MISMATCH) {
		fmt.Fprintln(out, "conflict:", merr.CodeName(), merr.Reason)
	}

	// History: append messages to a conversation (created by the first append).
	appended, err := client.Conversations.AppendMessages(ctx, &mnemov1.AppendMessagesRequest{
		Conversation: "users/ada/conversations/trip",
		Messages: []*mnemov1.HistoryMessage{
			{MessageJson: `{"role": "user", "content": "Book a table for Friday"}`},
			{MessageJson: `{"role": "assistant", "content": "Done: 8 pm at Taberna"}`},
		},
	})
	if err != nil {
		return err
	}
	for _, m := range appended.GetMessages() {
		fmt.Fprintf(out, "message %d (%s): %s\n", m.GetPosition(), m.GetRole(), m.GetText())
	}

	// Memories: create two, recall (a server stream) by a query: only the
	// relevant one comes back (set MinScore: proto.Float64(0) for every match).
	for _, m := range []struct{ id, text string }{{"diet", "Ada is vegetarian"}, {"seat", "Ada prefers window seats"}} {
		if _, err := client.Memories.CreateMemory(ctx, &mnemov1.CreateMemoryRequest{
			Parent: "users/ada", MemoryId: m.id, Memory: &mnemov1.Memory{Text: m.text},
		}); err != nil {
			return err
		}
	}
	recall, err := client.Memories.RecallMemories(ctx, &mnemov1.RecallMemoriesRequest{Parent: "users/ada", Query: "vegetarian food"})
	if err != nil {
		return err
	}
	for {
		hit, err := recall.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "recalled #%d: %s\n", hit.GetRank(), hit.GetMemory().GetText())
	}

	// Bad input: INVALID_ARGUMENT with the ErrorInfo reason and the field.
	_, err = client.Memories.CreateMemory(ctx, &mnemov1.CreateMemoryRequest{Parent: "ada", Memory: &mnemov1.Memory{Text: "x"}})
	if errors.As(err, &merr) {
		fmt.Fprintln(out, "bad input:", merr.CodeName(), merr.Reason, merr.FieldViolations[0].Field)
	}

	// The change feed: everything above, then a heartbeat once caught up.
	follower := client.Follow("ada")
	for event, err := range follower.Events(ctx) {
		if err != nil {
			return err
		}
		if event.Heartbeat != nil {
			fmt.Fprintln(out, "caught up at cursor", event.Heartbeat.GetCursor())
			break
		}
		c := event.Change
		fmt.Fprintf(out, "change %d: %s %s\n", c.GetCursor(), c.GetOperation(), c.GetResourceName())
	}
	return nil
}
