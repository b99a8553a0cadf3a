from dataclasses import dataclass, field

PERCENT_CODES = {"WELCOME10": (10, 2000)}  # code -> (percent, minimum subtotal)
FLAT_CODES = {"FLAT5": 500}


@dataclass
class Item:
    sku: str
    price_cents: int
    qty: int = 1


@dataclass
class Cart:
    items: list[Item] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)

    def add(self, sku: str, price_cents: int, qty: int = 1) -> None:
        for it in self.items:
            if it.sku == sku:
                it.qty += qty
                return
        self.items.append(Item(sku, price_cents, qty))

    def subtotal(self) -> int:
        return sum(it.price_cents * it.qty for it in self.items)

    def total(self) -> int:
        subtotal = self.subtotal()
        total = subtotal
        percent_done = flat_done = False
        for code in self.codes:
            code = code.strip().upper()
            if code in PERCENT_CODES and not percent_done:
                pct, minimum = PERCENT_CODES[code]
                if subtotal >= minimum:
                    total -= (total * pct + 50) // 100
                    percent_done = True
        for code in self.codes:
            code = code.strip().upper()
            if code in FLAT_CODES and not flat_done:
                total -= FLAT_CODES[code]
                flat_done = True
        return max(total, 0)
