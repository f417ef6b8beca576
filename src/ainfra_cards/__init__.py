"""ainfra-cards: turn the AI-infra interview question bank into stable-ID Anki decks."""

__version__ = "0.1.0"
