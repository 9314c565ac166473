package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"mnemo.dev/clients/go/mnemo"
	"mnemo.dev/clients/go/mnemov1"
)

func main() {
	ctx := context.Background()
	target := os.Getenv("MNEMO_TARGET") // as the CLI: host:port or http://host:port
	if target == "" {
		target = "127.0.0.1:50051"
	}
	client, err := mnemo.New(target) // 10 s deadlines, UNAVAILABLE retried
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	// Long-term memory: save an entry, then follow the change feed from just before it.
	created, err := client.Memories.CreateMemory(ctx, &mnemov1.CreateMemoryRequest{
		Parent: "users/ada", Memory: &mnemov1.Memory{Text: "Ada cycles to work.", Key: "commute"},
	})
	if err != nil {
		log.Fatal(err)
	}
	follower := client.Follow("ada", mnemo.AfterCursor(created.GetChangeCursor()-1))
	for event, err := range follower.Events(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(event.Change.GetResourceName() == created.GetMemory().GetName()) // true
		break
	}

	// Errors carry the status code and the server's reason.
	_, err = client.WorkingMemory.SaveMemoryState(ctx, &mnemov1.SaveMemoryStateRequest{MemoryState: &mnemov1.MemoryState{
		Name: "users/ada/conversations/work/memoryState", Summary: "stale", Etag: "old",
	}})
	var merr *mnemo.Error
	if errors.As(err, &merr) {
		fmt.Println(merr.CodeName(), merr.Reason) // ABORTED ETAG_MISMATCH
	}
}
