"""The JSON API: jobs and circuits (`jobs`), liveness and this engine's status (`health`), the fleet
(`fleet`); `responses` holds the error shape they share."""
