package heedgrpc

// retryAttemptMD, for the external tests.
const RetryAttemptMetadata = retryAttemptMD
