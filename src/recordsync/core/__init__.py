"""The ground every stage stands on: shared types, the exception tree, secrets, the service's
resend-safety rules, run ids. Imports nothing else of recordsync."""
