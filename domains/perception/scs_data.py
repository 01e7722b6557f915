"""SCS's training data (GenuineWWD/SCS_data on the Hub), in the format its code reads.

GenuineWWD/SCS@7014027 trains on JSON lines ``{"message": "<a JSON chat as a string>", "answer": "..."}``
(README.md:36-65; ``examples/SCS/grpo_qwen2_5vl7b.sh:2,10,45,48`` pass ``train_scs_qwen.jsonl`` with
``--input_key message``). The chat's user turn holds the image (``file:///path``) and the text; a Qwen model reads
that text as written (``openrlhf/trainer/ppo_utils/data_processor.py:166-190`` applies the chat template to the
message itself, no template of its own), so it is the sample's question, raw. The reward server keeps
``answer.strip()`` per prompt (``openrlhf/models/remote_rm/option_verifier.py:161-166``): the target of ``scs-mcq``,
which compares its first character with the answer's first capital letter.

SCS publishes no checkpoint, so no entry holds its prompt: a recipe on this data whose entry's user template is
``{question}`` asks exactly what SCS asked; one on another entry (``scs-smoke``'s ``curr-reft-7b``) wraps the text
in that entry's template. What instruction the released rows' text carries (the README's example has none) was
not read here (UNVERIFIED); the loader keeps the text as written.
"""

from __future__ import annotations

import json
from pathlib import Path

from domains.perception.data import message_image, read_message_rows, user_texts
from zoo.data import Sample, record_field


def load_scs(path: str, image_root: str | None = None, limit: int | None = None) -> list[Sample]:
    """SCS rows as samples: the user text as the question, ``{"answer": answer.strip()}`` as the target.

    ``image_root`` finds an image the row names by an absolute path elsewhere (the README asks the user to rewrite
    the paths; the file name is looked up there). A row whose chat has a turn other than the user's is refused:
    the zoo's loaders yield the question only, and the entry decides the system prompt.
    """
    file = Path(path)
    root = Path(image_root) if image_root else file.parent
    samples = []
    rows = read_message_rows(file)
    for i, row in enumerate(rows if limit is None else rows[:limit]):
        where = f"{file.name} row {i}"
        message = record_field(row, "message", where)
        chat = json.loads(message) if isinstance(message, str) else message
        chat = chat if isinstance(chat, list) else [chat]
        others = sorted({str(turn.get("role")) for turn in chat} - {"user"})
        if others:
            raise ValueError(f"{where}: the message has {', '.join(others)} turns; SCS rows hold one user turn "
                             "(image and question)")  # fmt: skip
        texts = user_texts(chat)
        if not texts:
            raise ValueError(f"{where}: the message's user turn has no text part")
        answer = str(record_field(row, "answer", where)).strip()
        samples.append(Sample(id=f"{file.stem}-{i}", images=(message_image(row, chat, root, where),),
                              prompt="\n".join(texts), target={"answer": answer}, meta={"source": file.name}))
    return samples
