"""Azure OpenAI's Batch API: OpenAI's (`openai_batches`), below the resource's `/openai` with
`api-version` on every call (the classic path), or below `/openai/v1` without it.

What differs from OpenAI's, from Azure's documentation and its own clients: the files and batches
live below the resource's `/openai` (not below a deployment), every call of the classic path carries
`?api-version=`, request lines and the batch name the endpoint `/chat/completions` (no `/v1`), and a
line's `model` is the deployment's name, which must be a Global Batch or Data Zone Batch deployment.
The batch object, its statuses, the result and error lines are OpenAI's.
"""

from __future__ import annotations

from urllib.parse import quote

from .openai_batches import OpenAIBatches
from .service import Wire

#: The endpoint Azure's batch request lines and batches name.
AZURE_ENDPOINT = "/chat/completions"


class AzureBatches(OpenAIBatches):
    """The Batch API of an Azure OpenAI resource below `base_url` (`{endpoint}/openai` or `.../v1`)."""

    service = "azure"
    max_requests = 100_000
    endpoint = AZURE_ENDPOINT

    def __init__(self, wire: Wire, base_url: str, api_version: str | None) -> None:
        super().__init__(wire, base_url)
        self.query = "" if api_version is None else "?api-version=" + quote(api_version, safe="")

    def url(self, path: str) -> str:
        return self.base + path + self.query
