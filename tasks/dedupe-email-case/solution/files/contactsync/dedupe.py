from .model import Contact


def _merge_into(kept: Contact, other: Contact) -> None:
    if not kept.name:
        kept.name = other.name
    if not kept.company:
        kept.company = other.company
    for phone in other.phones:
        if phone not in kept.phones:
            kept.phones.append(phone)


def _email_key(email: str) -> str:
    return email.strip().casefold()


def dedupe(contacts: list[Contact]) -> list[Contact]:
    """Merge contacts that share an email address, keeping input order.

    Emails match case-insensitively and ignoring surrounding whitespace; the
    first contact's email is kept as written. Contacts without an email are
    never merged. The input contacts are not modified.
    """
    out: list[Contact] = []
    by_email: dict[str, Contact] = {}
    for c in contacts:
        copy = Contact(c.name, c.email, c.company, list(c.phones))
        key = _email_key(c.email)
        if not key:
            out.append(copy)
            continue
        kept = by_email.get(key)
        if kept is None:
            by_email[key] = copy
            out.append(copy)
        else:
            _merge_into(kept, c)
    return out
