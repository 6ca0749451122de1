package heedotel

// Names the external tests use, unexported in the package because no user needs them.
const (
	KeyBreaker        = keyBreaker
	KeyBreakerFrom    = keyBreakerFrom
	KeyBreakerState   = keyBreakerState
	KeyBudget         = keyBudget
	KeyBudgetDecision = keyBudgetDecision
	KeyJobKind        = keyJobKind
	KeyJobResult      = keyJobResult
	KeyJobState       = keyJobState
	KeyOperation      = keyOperation
	KeyOutcome        = keyOutcome
	KeyOverload       = keyOverload
	KeyOverloadReason = keyOverloadReason
	KeyQueue          = keyQueue
	KeyReason         = keyReason
	KeyStatusClass    = keyStatusClass
	MaxGRPCMethods    = maxGRPCMethods
	MaxHosts          = maxHosts
	MaxJobKinds       = maxJobKinds
)
