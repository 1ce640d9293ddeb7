"""From a valid spec to the exact CreateTrainingJob request."""
