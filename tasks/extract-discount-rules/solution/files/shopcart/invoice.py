from dataclasses import dataclass

from .cart import Cart
from .pricing import apply_discounts

VAT_PERCENT = 20


@dataclass
class Invoice:
    lines: list[tuple[str, int, int]]  # sku, qty, line total
    subtotal: int
    discount: int
    codes: list[str]
    net: int
    vat: int
    gross: int

    @classmethod
    def from_cart(cls, cart: Cart) -> "Invoice":
        lines = [(it.sku, it.qty, it.price_cents * it.qty) for it in cart.items]
        subtotal = sum(t for _, _, t in lines)

        net, applied = apply_discounts(subtotal, cart.codes)

        vat = (net * VAT_PERCENT + 50) // 100
        return cls(lines, subtotal, subtotal - net, applied, net, vat, net + vat)

    def render(self) -> str:
        out = [f"{sku:<12} x{qty:<3} {total / 100:>9.2f}" for sku, qty, total in self.lines]
        out.append(f"{'subtotal':<17} {self.subtotal / 100:>9.2f}")
        if self.discount:
            out.append(f"{'discount':<17} {-self.discount / 100:>9.2f}  ({', '.join(self.codes)})")
        out.append(f"{'VAT ' + str(VAT_PERCENT) + '%':<17} {self.vat / 100:>9.2f}")
        out.append(f"{'total':<17} {self.gross / 100:>9.2f}")
        return "\n".join(out)
