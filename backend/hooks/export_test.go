package hooks

// TailQuery is the activity feed's statement, for its plan test.
const TailQuery = tailQuery
