from dataclasses import dataclass, field


@dataclass
class Contact:
    name: str = ""
    email: str = ""
    company: str = ""
    phones: list[str] = field(default_factory=list)

    @classmethod
    def from_row(cls, row: dict) -> "Contact":
        name = row.get("Name") or " ".join(
            p for p in (row.get("Given Name", ""), row.get("Family Name", "")) if p
        )
        email = row.get("Email") or row.get("E-mail 1 - Value") or ""
        phones = [
            p.strip()
            for key in ("Phone", "Phone 1 - Value", "Mobile")
            for p in (row.get(key) or "").split(":::")
            if p.strip()
        ]
        return cls(
            name=name.strip(),
            email=email,
            company=(row.get("Company") or row.get("Organization 1 - Name") or "").strip(),
            phones=phones,
        )

    def to_row(self) -> dict:
        return {
            "Name": self.name,
            "Email": self.email,
            "Company": self.company,
            "Phone": " / ".join(self.phones),
        }
