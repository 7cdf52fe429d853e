"""Verifier stages: one module per stage of the Universal Verifier pipeline.

`STAGES` lists the stage names a judge sees in `complete(..., stage=...)` (and that
`verifier.testing.ScriptedJudge` scripts are keyed by), in pipeline order.
"""

STAGES = ("rubric", "rubric_audit", "relevance", "action_scoring", "evidence", "conditions", "reality", "rescoring",
          "side_effects", "outcome", "diagnosis_failures", "diagnosis_validity")
