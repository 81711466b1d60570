"""The local console: a small web app served by ``make up`` to browse, edit and watch the
emulator's documents (the Firebase console's role, for machines without the Emulator UI).

Dev-only: never deployed. See docs/CONSOLE.md."""
