from .model import Contact


def _merge_into(kept: Contact, other: Contact) -> None:
    if not kept.name:
        kept.name = other.name
    if not kept.company:
        kept.company = other.company
    for phone in other.phones:
        if phone not in kept.phones:
            kept.phones.append(phone)


def dedupe(contacts: list[Contact]) -> list[Contact]:
    """Merge contacts that share an email address, keeping input order.

    Contacts without an email are never merged. The input contacts are not
    modified.
    """
    out: list[Contact] = []
    by_email: dict[str, Contact] = {}
    for c in contacts:
        copy = Contact(c.name, c.email, c.company, list(c.phones))
        if not c.email:
            out.append(copy)
            continue
        kept = by_email.get(c.email)
        if kept is None:
            by_email[c.email] = copy
            out.append(copy)
        else:
            _merge_into(kept, c)
    return out
