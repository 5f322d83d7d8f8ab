package admin

import "context"

// QueuesNamed reads the counts of the named queues, in the order given, in
// one pipeline: what the metrics read for the active queues. A name no
// queue has is all zeros, as with Queue.
func (s *Service) QueuesNamed(ctx context.Context, names []string) ([]QueueInfo, error) {
	return s.queueInfos(ctx, names)
}
