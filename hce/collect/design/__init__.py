"""What a study asks before anything is sent: the design file, its schema, the conditions'
fingerprints, the prompts and templates rendered from the rubric, the transcripts, the probes."""
