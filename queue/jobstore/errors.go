package jobstore

import "github.com/heed-go/heed/queue/internal/check"

// InputError reports bad input, naming the field: its Field (such as
// "kind", "args" or "EnqueueOptions.In") and its Reason (what is wrong
// with it). Its Error reads like "queue: kind is empty", and it matches
// [ErrInvalid]. It is defined in an internal package, the one set of
// input checks that queue and stores share, so that the checks can build
// it.
type InputError = check.InputError
