"""Published single-call / few-call judges (WebJudge, WebVoyager) on our judge backend, for comparison."""
